import pytest

from cloudhpc.errors import CloudhpcError
from cloudhpc.hostfile import parse_hosts_text, read_hosts_file
from cloudhpc.job import Host


def test_hosts_slots_comments_and_blanks():
    text = "# cluster\nnode1:4\n\nnode2   # one slot\n  node-3.example.org:16  \n"
    assert parse_hosts_text(text) == (
        Host("node1", 4),
        Host("node2", 1),
        Host("node-3.example.org", 16),
    )


@pytest.mark.parametrize(
    "text, line, what",
    [
        ("node1\nnode2:x\n", 2, "slots must be a positive integer"),
        ("node1:0\n", 1, "slots must be a positive integer"),
        ("ok\n# c\nnode a\n", 3, "not a host[:slots] entry"),
        ("a:2:3\n", 1, "not a host[:slots] entry"),
    ],
)
def test_malformed_lines_are_named(text, line, what):
    with pytest.raises(CloudhpcError) as e:
        parse_hosts_text(text, source="hosts.txt")
    assert f"hosts.txt line {line}:" in str(e.value) and what in str(e.value)


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(CloudhpcError, match="lists no hosts"):
        parse_hosts_text("# nothing\n\n")
    with pytest.raises(CloudhpcError, match="cannot read hosts file"):
        read_hosts_file(str(tmp_path / "absent"))
