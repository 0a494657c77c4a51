"""How cloudhpc's numba kernels are compiled and loaded: serial or parallel by the rank's thread
count, and loaded from numba's on-disk cache without numba's first-call start-up.

Two costs made every app's first kernel call take 0.4-0.7 s on a warm cache:
- numba's first cached call runs `target_context.refresh()`, which imports and registers all of
  numba's own typing and lowering code (arraymath, linalg, unicode, random, typed containers, ...)
  and `entrypoints.init_all()`, which imports every installed numba extension (awkward's alone is
  0.2 s). Neither is needed to run machine code that was compiled before.
- a `parallel=True` kernel loaded from the cache starts numba's threading layer (OpenMP here),
  even when the rank has one thread.

`kernel(...)` is `numba.njit(cache=True, ...)` that compiles with `parallel=True` only when the
rank runs T > 1 threads (T: NUMBA_NUM_THREADS, which the launchers export as the layout's thread
count; numba's own default, the machine's cores, when unset). The parallel twin is cached under
its own name: numba's cache key does not include the compile flags.

`load(*kernels)` rebuilds every specialization numba's cache holds for the kernels (current
source, this CPU) and installs it in the dispatcher: what `Dispatcher.compile` does on a cache
hit, without the refresh or the extensions (NRT, the runtime the code calls, is initialised as
refresh would). A kernel's later call with a type not in the cache compiles as usual (and that
compile refreshes the context itself). It uses numba internals (`_cache`, `_impl.rebuild`): on
any error it loads nothing and the kernels' first calls load them numba's usual way; the tests
check that it still loads.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import types
from collections.abc import Callable
from typing import Any

# What loading and first calling a cached kernel imports anyway: the module whose environments
# numba's array helpers (np.zeros, ...) refer to, and numpy.ma (numba's typeof of an array checks
# for masked arrays). Imported with the kernels' module, i.e. in the worker's `job_import` phase
# with numba itself, so that `jit` is the loading (0.1 s of imports under load otherwise).
import numba.np.arrayobj  # noqa: F401
import numpy.ma  # noqa: F401

PARALLEL_SUFFIX = "__parallel"


def threads() -> int:
    """T, the rank's thread count: NUMBA_NUM_THREADS (the layout's), else numba's default."""
    value = os.environ.get("NUMBA_NUM_THREADS", "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    from numba import config

    return max(1, int(config.NUMBA_NUM_THREADS))


def kernel(fn: Callable | None = None, *, parallel: bool = False, **options: Any):
    """`@kernel` / `@kernel(parallel=True, nogil=True)`: numba.njit(cache=True, **options), with
    parallel=True (prange runs on numba's threads) only when `parallel` and threads() > 1; with
    one thread prange is a plain range and no threading layer is started."""

    def wrap(f: Callable):
        from numba import njit

        if parallel and threads() > 1:
            f = _renamed(f, f.__qualname__ + PARALLEL_SUFFIX)
            return track_callees(njit(cache=True, parallel=True, **options)(f))
        return track_callees(njit(cache=True, **options)(f))

    return wrap(fn) if fn is not None else wrap


def track_callees(dispatcher: Any) -> Any:
    """Make numba's cache of `dispatcher` notice changes to the kernels it calls in other files.

    numba keys a cached kernel by its own file's time stamp and its own bytecode; a kernel it
    calls from another module is compiled into its machine code, so after that module changes
    the cache still serves the old code (NPB's EP ran 4x slow on a stale generator). The time
    stamps and sizes of those modules' files join the cache's index key, found by following the
    names the kernel's code uses (module.function or an imported kernel), transitively. Returns
    the dispatcher; a dispatcher without a cache (or a numba without these internals) is left
    as it is."""
    cache = getattr(dispatcher, "_cache", None)
    own = getattr(cache, "_index_key", None)
    if own is None or getattr(own, "_cloudhpc_tracks", False):
        return dispatcher

    def index_key(sig: Any, codegen: Any) -> tuple:
        return (*own(sig, codegen), _callee_stamps(dispatcher.py_func))

    index_key._cloudhpc_tracks = True  # type: ignore[attr-defined]
    cache._index_key = index_key
    return dispatcher


def _callee_stamps(f: Callable) -> tuple:
    """(file, mtime_ns, size) of every other source file whose kernels `f` calls, sorted."""
    from numba.core.dispatcher import Dispatcher

    home = f.__code__.co_filename
    seen: set[int] = set()
    files: set[str] = set()
    todo = [f]
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        scope = getattr(fn, "__globals__", {})
        names = _names(fn.__code__)
        called = []
        for name in names:
            value = scope.get(name)
            if isinstance(value, types.ModuleType):  # module.kernel(...)
                called += [vars(value).get(attr) for attr in names]  # no lazy submodule imports
            else:
                called.append(value)
        for target in called:
            if isinstance(target, Dispatcher):
                todo.append(target.py_func)
                files.add(target.py_func.__code__.co_filename)
    stamps = []
    for path in sorted(files - {home}):
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamps.append((path, st.st_mtime_ns, st.st_size))
    return tuple(stamps)


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names a code object and its nested code objects use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _renamed(f: Callable, qualname: str) -> Callable:
    """A copy of `f` under another qualified name (numba names its cache files after it)."""
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    functools.update_wrapper(g, f)
    g.__qualname__ = qualname
    del g.__wrapped__  # numba would follow it to `f`
    g.__kwdefaults__ = f.__kwdefaults__
    return g


def load(*kernels: Any) -> int:
    """Install every specialization numba's cache holds for `kernels` (numba dispatchers, e.g.
    made by `kernel`, or modules: every numba dispatcher in the module); returns how many were
    loaded. Call the kernels on tiny inputs afterwards (an app's warm_up): a type the cache did
    not hold then compiles (and is cached for next time). Anything else is skipped, and a
    dispatcher is read once per process (calling load again is cheap)."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.dispatcher import Dispatcher
        from numba.core.runtime import rtsys
    except ImportError:
        return 0
    dispatchers = []
    for k in kernels:
        if isinstance(k, types.ModuleType):
            dispatchers += [v for v in vars(k).values() if isinstance(v, Dispatcher)]
        elif isinstance(k, Dispatcher):
            dispatchers.append(k)
    loaded = 0
    uncached = []
    read = 0
    with global_compiler_lock:
        for dispatcher in dispatchers:
            if id(dispatcher) in _READ:  # read already (or named twice: modules share kernels)
                continue
            _READ.add(id(dispatcher))  # dispatchers live as long as their module
            read += 1
            track_callees(dispatcher)
            try:
                count = _load_cached(dispatcher, rtsys)
            except Exception:  # numba internals changed, or a damaged cache: numba's own way
                continue
            loaded += count
            if count == 0 and getattr(getattr(dispatcher, "_cache", None), "_cache_file", None):
                uncached.append(dispatcher)
    UNCACHED[0] += len(uncached)
    UNCACHED[1] += read
    return loaded


_READ: set[int] = set()
# [kernels `load` found no machine code for in numba's cache (this source, this CPU), kernels
# it was asked for]: the count the worker names when a compilation starts
UNCACHED = [0, 0]


class CompileWatch:
    """Counts numba's compilations in this process from its install on (numba's
    "numba:compile" event, sent only when a kernel is compiled, not when it is loaded from the
    cache): how many kernels (and the kernels they call) were compiled, and the seconds spent
    in the outermost compilations."""

    def __init__(self, on_first: Callable[[], None] | None = None) -> None:
        from numba.core import event

        self.on_first = on_first  # called as the first compilation starts
        self.compiled = 0
        self.seconds = 0.0
        self._depth = 0
        self._t0 = 0.0
        watch = self

        class _Listener(event.Listener):
            def on_start(self, ev) -> None:
                if watch.compiled == 0 and watch.on_first is not None:
                    watch.on_first()
                watch.compiled += 1
                watch._depth += 1
                if watch._depth == 1:
                    watch._t0 = time.perf_counter()

            def on_end(self, ev) -> None:
                watch._depth -= 1
                if watch._depth == 0:
                    watch.seconds += time.perf_counter() - watch._t0

        self._listener = _Listener()
        event.register("numba:compile", self._listener)

    def close(self) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)


def load_packages(*packages: str) -> int:
    """`load` every numba dispatcher of the imported modules of `packages` (dotted names, e.g.
    "cloudhpc.models.bsp"): for apps whose kernels are spread over many modules."""
    modules = [
        module
        for name, module in list(sys.modules.items())
        if module is not None and any(name == p or name.startswith(p + ".") for p in packages)
    ]
    return load(*modules)


def _load_cached(dispatcher: Any, rtsys: Any) -> int:
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None:  # not njit(cache=True) (or NUMBA_DISABLE_JIT)
        return 0
    index = cache_file._load_index()  # {} when the source changed since the cache was written
    if not index:
        return 0
    context = dispatcher.targetctx
    codegen = context.codegen()
    loaded = 0
    for key in index:
        sig = key[0]
        if key != cache._index_key(sig, codegen):  # another CPU, or other bytecode
            continue
        if tuple(sig) in dispatcher.overloads:
            continue
        data = cache_file.load(key)
        if data is None:
            continue
        rtsys.initialize(context)  # the NRT the machine code calls (refresh's first step)
        cres = cache._impl.rebuild(context, data)
        if not cres.objectmode:
            context.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
        dispatcher.add_overload(cres)
        dispatcher._cache_hits[sig] += 1
        loaded += 1
    return loaded
