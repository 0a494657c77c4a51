"""selftest: a tiny app for tests of the launch path (not a `cloudhpc run` app)."""
