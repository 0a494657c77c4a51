"""Terminal output: a progress bar fed by the ranks, and tables (rich, on stderr/stdout).

The one escaping point of what cloudhpc shows (docs/failures.md, rule 2): names and record
fields are data. `out` and `err` print with rich's markup off unless a caller asks for it (and
then escapes its values with `shown`), and every string rich renders, in a print, a table's
cell or title, a progress bar's columns, passes through visible.py first: ESC, carriage returns,
C1 controls, bidirectional overrides are shown as escapes, never sent to the terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..launch.runner import Monitor
from ..visible import visible

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table


class _LazyConsole:
    """A rich Console made on first use: importing rich is 25 ms of every command's start-up, and
    a `--json` run with its output piped prints nothing through it."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    @property
    def rich(self) -> Console:
        """The Console itself, for rich objects that take one (Progress(console=...))."""
        if self._console is None:
            self._console = _data_console()(markup=False, highlight=False, **self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rich, name)


def _data_console() -> type:
    """rich's Console, with every string it renders made visible first."""
    from rich.console import Console

    class DataConsole(Console):
        def render_str(self, text: str, **options: Any):  # noqa: ANN202 (rich's Text)
            return super().render_str(visible(text, newlines=True), **options)

    return DataConsole


def shown(value: Any) -> str:
    """`value` inside a string printed with markup=True: escaped as rich markup."""
    from rich.markup import escape

    return escape(visible(str(value)))


# Piped or redirected output is read by scripts and tests: never truncate a table to 80 columns.
out = _LazyConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err = _LazyConsole(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 240)


def progress_bar(first: str, *fields: str, transient: bool = False) -> Progress | None:
    """A rich bar on stderr (None off a terminal, where a bar shows nothing): `first` as its
    first column (a format such as "{task.description}"), then the bar, done/total and the time
    elapsed, then a column per task field named in `fields`. Not started."""
    if not sys.stderr.isatty():
        return None
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class VisibleColumn(TextColumn):  # a column's text is data: no markup, no raw escapes
        def render(self, task):  # noqa: ANN001, ANN202
            text = self.text_format.format(task=task)
            return Text(visible(text), style=self.style, justify=self.justify)

    columns = [VisibleColumn(f"{{task.fields[{name}]}}") for name in fields]
    return Progress(
        VisibleColumn(first),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        *columns,
        console=err.rich,
        transient=transient,
    )


class ProgressMonitor(Monitor):
    """A progress bar on stderr while ranks run; rank output goes to stderr under --json."""

    def __init__(self, title: str, quiet_stdout: bool = False) -> None:
        self.title = title
        self.quiet_stdout = quiet_stdout
        self._progress: Progress | None = None
        self._task = None

    def progress(self, done: int, total: int, label: str) -> None:
        if not sys.stderr.isatty():  # a transient bar shows nothing off a terminal
            return
        if self._progress is None:
            self._progress = progress_bar("{task.description}", "label", transient=True)
            self._progress.start()
            self._task = self._progress.add_task(self.title, total=total, label=label)
        self._progress.update(self._task, completed=done, total=total, label=label)

    def note(self, text: str) -> None:
        err.print(f"cloudhpc: {text}", highlight=False, markup=False)

    def status(self, text: str) -> None:
        if not sys.stderr.isatty():
            return
        if self._progress is not None:  # the bar's label: it no longer stands at N/N silently
            self._progress.update(self._task, label=text)
        else:
            err.print(text, highlight=False, markup=False)

    def say(self, text: str) -> None:
        (err if self.quiet_stdout else out).print(text, highlight=False, markup=False)

    def output(self, line: str) -> None:
        print(line, file=sys.stderr if self.quiet_stdout else sys.stdout)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 1e5 or abs(value) < 1e-3:
            return f"{value:.3e}"
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return "" if value is None else str(value)


def table(title: str, rows: Sequence[dict], columns: Sequence[str] | None = None) -> Table:
    from rich.table import Table

    columns = list(columns or (rows[0].keys() if rows else []))
    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c, justify="right" if rows and _numeric(rows, c) else "left")
    for r in rows:
        t.add_row(*(fmt(r.get(c)) for c in columns))  # data: the console shows no markup
    return t


def _numeric(rows: Sequence[dict], column: str) -> bool:
    return all(isinstance(r.get(column), (int, float)) or r.get(column) is None for r in rows)


def print_table(title: str, rows: Sequence[dict], columns: Sequence[str] | None = None) -> None:
    out.print(table(title, rows, columns))
