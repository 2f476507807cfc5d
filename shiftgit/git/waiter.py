"""Post-commit without a Python start-up: the gate's process leaves a fork waiting for its commit.

When the commit gate (pre-commit, run by the shim) passes, the note the commit will get is already
known up to the commit's id (git/quicknote.py). So the hook forks once the gate passed and left the trailers: the
parent tells the child on a pipe (the verdict) and answers git; any end of the parent without that verdict sends
the child away having written nothing. The child reads objects with the gate's reader
(git/looseread.py: the loose files, what the gate read of them, and the cat-file the gate started if it needed one;
started now if a notes tree is partly packed) and moves the notes refs in the files (git/refswap.py), else with an
`update-ref` it starts now; the files it writes once the commit is made, it makes empty before (git/spares.py).
While git writes the commit, it does what need not hold the commit back: it remembers the ledgers the gate
validated and prepares the note (usually rendered by the checkpoint already: git/prenote.py; else it loads the
renderer and the secret scanner's regular expressions, ~10 ms, which post-commit then waits for). It forked before
the gate judged, until a fork there, on 2 busy cores, was measured to cost the gate itself more (the two processes
compete, and each page either writes after a fork is copied: ~2 µs a page, hundreds of pages) than the note's
rendering it let start early, which the checkpoint now does. The child then waits on two FIFOs in
`<git-dir>/shift/`, named after the pid of the `git commit` they serve and the child's pid and start time
(`started`):

    wait-<commit pid>-<child>  the child keeps it open for writing: a reader never blocks on opening it,
                               and reads the child's answer, or end of file once the child is gone
    go-<commit pid>-<child>    the shim writes a line to it (opened read-write: never blocks)

The post-commit shim of the same `git commit` (it checks that this commit's gate passed, in the
trailers file, and that the child is alive: that pid runs, is no zombie, and started when the name
says, so no process that took the pid of a killed child since) opens `wait-`, writes to `go-`, and reads one line:
`written` when the child wrote the prepared note on HEAD (quicknote checks it against HEAD's trees and
swaps both notes refs); anything else, or nothing, sends the shim the usual way. The child removes both
FIFOs before it answers or leaves, so a shim finds them with the child behind them or not at all (a
killed child leaves them: the next gate of a `git commit` with that pid removes them first). The child
leaves when the `git commit` it waited for is gone (an aborted commit: no post-commit comes), or after
an hour at most. POSIX only (fork, mkfifo); anywhere else, or on any error, the hook does that work
itself and post-commit runs Python as before.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~4 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from shiftgit.git.looseread import Loose
    from shiftgit.git.notestree import CatFile
    from shiftgit.git.spares import Spares

    Prepared = tuple[list[str], str, str]

ENABLED = False  # set by __main__.hook_main: only the shims' post-commit knows how to wake the child
WAIT = "wait-"
GO = "go-"
WRITTEN = b"written\n"
LONGEST = 3600.0  # seconds a child waits at most
SAMPLE = 16  # notes subtrees `_warm` looks at


def leave(gitdir: str, work: Callable[[], Prepared | None], environ: Mapping[str, str],
          changes: list[tuple[str, str | None, str | None]] | None = None,
          cat: CatFile | Loose | None = None) -> Callable[[], None] | None:
    """Fork, once the gate passed, a child that loads what `work` needs, waits for the verdict, then runs `work` (the
    hook's remaining work: it returns the prepared note) and waits to write that note on the commit. Returns in the
    parent `passed`, to call once its own work is done (never called: the child leaves as soon as this process
    ends, having written nothing); None: nothing was started, the caller does `work` itself.
    `changes`: the staged ledger changes; when the checkpoint rendered their note (git/prenote.py), the child
    loads nothing to render one. `cat`: the gate's cat-file, handed over to the child (no second one to start)."""
    if not ENABLED or not hasattr(os, "fork") or not hasattr(os, "mkfifo"):
        return None
    commit_pid = os.getppid()  # the shim exec'd Python: its parent is the `git commit`
    folder = os.path.join(gitdir, "shift")
    _clear(folder, commit_pid)  # a child killed before it could: its pid may be taken since
    if environ.get("GIT_DIR") or not environ.get("GIT_INDEX_FILE"):
        return None  # quicknote's fast way is off with GIT_DIR; without GIT_INDEX_FILE git did not run this hook
    made = [os.path.join(folder, f"{kind}{commit_pid}-new") for kind in (WAIT, GO)]
    fds: list[int] = []
    try:
        for path in made:
            os.mkfifo(path, 0o600)
            fds.append(os.open(path, os.O_RDWR))  # a FIFO opened read-write never blocks (Linux, BSDs)
        fds += os.pipe()  # the verdict: the parent writes one byte once the gate passed (not inherited by exec)
        pid = os.fork()
        if pid:  # the names the shim looks for, with the child's pid and start time for it to check first
            for path, kind in zip(made, (WAIT, GO), strict=True):
                os.rename(path, os.path.join(folder, f"{kind}{commit_pid}-{pid}-{started(pid)}"))
    except OSError:
        for fd in fds:
            os.close(fd)
        _clear(folder, commit_pid)
        return None
    if pid:
        for fd in fds[:3]:
            os.close(fd)
        if cat is not None:
            cat.hand_over()
        return lambda: _pass(fds[3])
    os.close(fds[3])
    _child(commit_pid, gitdir, folder, fds[:3], work, changes or [], cat)
    raise AssertionError("unreachable")  # pragma: no cover - _child never returns


def _pass(verdict_fd: int) -> None:
    """The gate passed: the child goes on (it leaves at end of file, this process's end, with no verdict). A child
    already gone (killed) only costs the fast way: the shim finds no live child and runs Python."""
    try:
        os.write(verdict_fd, b"y")
    except OSError:
        pass
    finally:
        os.close(verdict_fd)


def started(pid: int) -> str:
    """When process `pid` started (field 22 of /proc/PID/stat, clock ticks since boot): with its pid, it names one
    process, where a pid alone may be taken again once its process is gone. "0" without /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b") ", 1)[1].split()[19].decode()
    except (OSError, IndexError, UnicodeError):
        return "0"


def _clear(folder: str, commit_pid: int) -> None:
    """Remove the FIFOs named after `commit_pid`."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith((f"{WAIT}{commit_pid}-", f"{GO}{commit_pid}-")):
            _remove(os.path.join(folder, name))


def _child(commit_pid: int, gitdir: str, folder: str, fds: list[int], work: Callable[[], Prepared | None],
           changes: list[tuple[str, str | None, str | None]], gate_cat: CatFile | Loose | None) -> None:
    """Detach from git's streams and session, load what `work` needs, wait for the gate's verdict, do `work`, wait
    for the shim, answer it; never returns."""
    answer_fd, go_fd, verdict_fd = fds
    code = 0
    spares: Spares | None = None
    wait, go = (os.path.join(folder, f"{kind}{commit_pid}-{os.getpid()}-{started(os.getpid())}") for kind in (WAIT, GO))
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # git (and whoever runs `git commit`) must not wait for our streams
            os.dup2(null, fd)
        os.close(null)
        from shiftgit.git import prenote, quicknote

        if not prenote.prerendered(gitdir, changes):  # the checkpoint rendered none for these changes:
            from shiftgit.git import handoff  # noqa: F401  what rendering the note loads, with the secret
            from shiftgit.ledger import secrets  # noqa: F401  scanner's regular expressions (~7 ms)

        # the gate's cat-file, else one started now, while git writes the commit; and the notes refs moved in the
        # files (git/refswap.py), else by an update-ref started now (both end at our end)
        cat = gate_cat or quicknote.cat_file(os.environ)
        _warm(cat)
        refs = None if quicknote.refs_in_files(os.environ) else quicknote.ref_updates(os.environ)
        if os.read(verdict_fd, 1) != b"y":  # end of file: the gate's process ended without a verdict
            return
        prepared = work()
        if prepared is None:
            return
        lines, note, data = prepared
        quicknote.store_blobs(lines, note, data, os.environ)  # the notes' blobs need no commit id: written before it
        spares = quicknote.spares(os.environ, refs is None)  # the files the rest goes into (git/spares.py)
        if _woken(commit_pid, go_fd):
            _remove(wait)
            _remove(go)
            if quicknote.write_checked(lines, note, data, os.environ, cat=cat, refs=refs, spares=spares):
                os.write(answer_fd, WRITTEN)
    except BaseException:  # noqa: BLE001 - the shim goes the usual way on any answer but WRITTEN
        code = 1
    finally:
        _remove(wait)
        _remove(go)
        if spares is not None:
            spares.close()
        os._exit(code)  # the parent's buffers and exit handlers are not the child's


def _warm(cat: object) -> None:
    """A reader of the loose files (git/looseread.py) starts its cat-file now, while git makes the commit, when a notes
    tree has subtrees that are not loose (packed): the one the note goes into is read once the commit is made. It
    looks at SAMPLE of them (of 512 at 10,000 notes, each a stat: ~1.5 ms of the child's CPU while git works): a gc
    packs them all, and each commit since rewrote one loose, so any packed are found among a few; when the one the
    note needs is packed all the same, cat-file starts then."""
    from shiftgit.git.looseread import Loose
    from shiftgit.git.quicknote import DATA_REF, NOTES_REF
    from shiftgit.git.rawgit import TREE, parse_tree

    if isinstance(cat, Loose):
        trees = [t for t in cat.get([f"{NOTES_REF}^{{tree}}", f"{DATA_REF}^{{tree}}"]) if t is not None]
        entries = [entry for t in trees for entry in parse_tree(t[2], len(t[0])).values() if entry[0] == TREE]
        if any(not cat.is_loose(oid) for _, oid in entries[::max(1, len(entries) // SAMPLE)]):
            cat.cat  # noqa: B018  # started


def _woken(commit_pid: int, go_fd: int) -> bool:
    """Wait until the shim writes to `go` (True), or the `git commit` is gone, or LONGEST passed (False)."""
    import select
    import time

    watched = [go_fd]
    try:
        watched.append(os.pidfd_open(commit_pid))  # readable when that process ends (Linux 5.3)
    except (AttributeError, OSError):
        pass
    deadline = time.monotonic() + LONGEST
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select(watched, [], [], min(left, 1.0) if len(watched) == 1 else left)
        if go_fd in ready:
            return True
        if ready or (len(watched) == 1 and not _exists(commit_pid)):
            return False
    return False


def _exists(pid: int) -> bool:
    from shiftgit.procs import pid_exists  # only without pidfd (not Linux): polled once a second

    return pid_exists(pid)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
