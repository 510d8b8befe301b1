"""A real SSH session: sshd on 127.0.0.1 with throw-away keys, tcview over `ssh -t` in tmux.

Opens a GPU trace on a kernel, reads its `def` line on screen, quits, and measures the bytes
sent to the terminal per tree move and per viewer page (tmux pipe-pane). Skips where sshd, ssh,
ssh-keygen or tmux are missing, or sshd does not start (Debian's openssh-server is installed by
.ci/run).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES, unpack_shared
from run_helpers import wait_for
from tmux_helpers import Terminal

from tcview.ingest.source import load_source

# slow; one worker runs the module, so its sshd (a module fixture) starts once
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ssh")]
TREE_MOVE_LIMIT = 5 * 1024
SIZE = (120, 40)
SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")


def _sshd_binary() -> str | None:
    found = shutil.which("sshd")
    if found:
        return found
    return next((p for p in SSHD_CANDIDATES if os.access(p, os.X_OK)), None)


@dataclass(frozen=True)
class SshServer:
    port: int
    key: Path

    def ssh_args(self) -> list[str]:
        return [
            "ssh",
            "-p",
            str(self.port),
            "-i",
            str(self.key),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            "127.0.0.1",
        ]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _sshd_config(tmp: Path, port: int) -> Path:
    config = tmp / "sshd_config"
    config.write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {tmp / 'host_key'}\n"
        f"PidFile {tmp / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {tmp / 'authorized_keys'}\n"
        f"AllowUsers {_user()}\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\n"
        "X11Forwarding no\n"
        "AllowTcpForwarding no\n"
        "PrintMotd no\n"
        "UseDNS no\n"
    )
    return config


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _privsep_dir() -> None:
    # sshd refuses to start without its privilege separation directory, which only the
    # service's own start-up creates
    run_sshd = Path("/run/sshd")
    if not run_sshd.exists() and os.geteuid() == 0:
        run_sshd.mkdir(mode=0o755, parents=True, exist_ok=True)


def _start_sshd(sshd: str, tmp: Path) -> tuple[subprocess.Popen[bytes], int, str]:
    """Start sshd on a free port; a port taken in the meantime gets another try."""
    log = ""
    for _ in range(3):
        port = _free_port()
        config = _sshd_config(tmp, port)
        check = subprocess.run([sshd, "-t", "-f", str(config)], capture_output=True, text=True)
        if check.returncode != 0:
            return_log = check.stderr.strip() or check.stdout.strip()
            pytest.skip(f"sshd rejects its configuration: {return_log}")
        log_path = tmp / f"sshd-{port}.log"
        proc = subprocess.Popen(
            [sshd, "-D", "-e", "-f", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=open(log_path, "wb"),  # noqa: SIM115 - the child keeps it
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if "Server listening" in log_path.read_text(errors="replace"):
                return proc, port, str(log_path)
            time.sleep(0.05)
        log = log_path.read_text(errors="replace")
        if proc.poll() is None:
            proc.terminate()
            proc.wait(5)
    pytest.skip(f"sshd did not start: {log.strip()[-500:]}")


@pytest.fixture(scope="module")
def ssh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    sshd = _sshd_binary()
    missing = [n for n in ("ssh", "ssh-keygen", "tmux") if shutil.which(n) is None]
    if sshd is None:
        missing.insert(0, "sshd")
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (apt-get install openssh-server tmux)")
    tmp = tmp_path_factory.mktemp("sshd")
    tmp.chmod(0o700)
    _keygen(tmp / "host_key")
    _keygen(tmp / "user_key")
    shutil.copy(tmp / "user_key.pub", tmp / "authorized_keys")
    (tmp / "authorized_keys").chmod(0o600)
    _privsep_dir()
    assert sshd is not None  # else skipped above
    proc, port, log = _start_sshd(sshd, tmp)
    server = SshServer(port, tmp / "user_key")
    try:
        login = subprocess.run(
            [*server.ssh_args(), "true"], capture_output=True, text=True, timeout=30
        )
        if login.returncode != 0:
            sshd_log = Path(log).read_text(errors="replace")
            pytest.skip(f"ssh login to the test sshd failed: {login.stderr} {sshd_log[-500:]}")
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# ---------------------------------------------------------------- tmux


def _settled_size(path: Path, quiet: float = 0.5, limit: float = 10.0) -> int:
    """The size of a growing file once nothing has been added to it for `quiet` seconds."""
    deadline = time.monotonic() + limit
    size = path.stat().st_size
    still_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = path.stat().st_size
        if now != size:
            size, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= quiet:
            break
    return size


POSITION = re.compile(rb"\x1b\[(\d+);(\d+)H")


@dataclass(frozen=True)
class Drawn:
    total: int
    viewer: int


def drawn_inside(data: bytes, left: int, bottom: int) -> int:
    """Bytes drawn at column `left` or right of it, above row `bottom` (1-based).

    Textual positions the cursor (CSI row;col H) before each run it draws, so every byte
    after a position belongs to that place until the next one.
    """
    marks = list(POSITION.finditer(data))
    inside = 0
    for mark, end in zip(marks, [m.start() for m in marks[1:]] + [len(data)], strict=True):
        if int(mark.group(2)) >= left and int(mark.group(1)) < bottom:
            inside += end - mark.start()
    return inside


def _viewer_box(screen: str) -> tuple[int, int]:
    """The viewer's first column and the first row below it (1-based), from the top border."""
    top = screen.splitlines()[0]
    corner = top.find("╮╭")
    assert corner >= 0, screen
    return corner + 2, SIZE[1] - 1


@dataclass
class Session:
    term: Terminal
    tmp: Path
    pipe: Path

    def keys(self, *keys: str) -> None:
        self.term.keys(*keys)

    def bytes_for(self, *keys: str) -> int:
        """Bytes written to the terminal by one key press, once the redraw has settled."""
        before = _settled_size(self.pipe)
        self.keys(*keys)
        return _settled_size(self.pipe) - before

    def drawn_for(self, left: int, bottom: int, *keys: str) -> Drawn:
        """Like bytes_for, also telling the bytes drawn inside the viewer's box."""
        before = _settled_size(self.pipe)
        self.keys(*keys)
        after = _settled_size(self.pipe)
        with open(self.pipe, "rb") as fh:
            fh.seek(before)
            data = fh.read(after - before)
        return Drawn(len(data), drawn_inside(data, left, bottom))

    def burst(self, key: str, count: int, gap: float = 0.03) -> int:
        """Bytes for `count` presses `gap` seconds apart, as a held key sends them."""
        before = _settled_size(self.pipe)
        for _ in range(count):
            self.keys(key)
            time.sleep(gap)
        return _settled_size(self.pipe) - before

    def remote_pid(self) -> int:
        return int((self.tmp / "remote.pid").read_text().strip())


@contextmanager
def _ssh_tcview(server: SshServer, trace: Path, kernel: str, tmp: Path) -> Iterator[Session]:
    """tcview over `ssh -t` in a detached tmux session, its output piped into a file."""
    pipe = tmp / "pane.out"
    pipe.touch()
    # exec: the remote tcview keeps the shell's pid, written first, so the test can check
    # that it is gone after `q`
    remote = (
        f"cd {shlex.quote(str(REPO))} && echo $$ > {shlex.quote(str(tmp / 'remote.pid'))} && "
        f"exec env TERM=xterm-256color {shlex.quote(sys.executable)} -m tcview.commands.cli open "
        f"{shlex.quote(str(trace))} --goto {shlex.quote(kernel)}"
    )
    ssh = shlex.join([*server.ssh_args()[:1], "-t", *server.ssh_args()[1:], remote])
    with Terminal(ssh, SIZE) as term:
        term.pipe_to(str(pipe))
        yield Session(term, tmp, pipe)


def _trace_and_kernel() -> tuple[Path, str]:
    shared = unpack_shared()
    trace = (
        shared / "h200-torch2.11" / "gpt_train" / "trace"
        if shared is not None
        else SAMPLES / "gpu_triton_user" / "trace"
    )
    model = load_source(str(trace))
    kernels = [k.name for k in model.kernels if k.method == "triton"]
    assert kernels, f"no Triton kernel in {trace}"
    return trace, kernels[-1]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------- tests


def test_ssh_open_kernel_read_and_quit(ssh_server: SshServer, tmp_path: Path) -> None:
    trace, kernel = _trace_and_kernel()
    with _ssh_tcview(ssh_server, trace, kernel, tmp_path) as session:
        want = f"kernel {kernel}"[:40]  # the kernel's detail opens on its rows
        screen = session.term.wait_for(want)
        assert "kernels" in screen  # the status bar's counts
        pid = session.remote_pid()
        session.keys("q")
        status = session.term.wait_ended(what="q to end tcview and so ssh")
        assert status == 0, f"ssh exited {status}"
        assert wait_for(lambda: not _pid_alive(pid), 10), "the remote tcview must be gone after q"


def test_ssh_bytes_per_move_and_page(
    ssh_server: SshServer, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    trace, kernel = _trace_and_kernel()
    with _ssh_tcview(ssh_server, trace, kernel, tmp_path) as session:
        want = f"kernel {kernel}"[:40]  # the kernel's detail opens on its rows
        screen = session.term.wait_for(want, what="the kernel's detail")
        left, bottom = _viewer_box(screen)
        startup = _settled_size(session.pipe, quiet=1.0)
        # up from the kernel: each move lands on another kernel (over SSH the viewer shows
        # an item on Enter, so the move itself is all that is drawn)
        moves = [session.drawn_for(left, bottom, "k") for _ in range(10)]
        burst = session.burst("j", 10)  # back down, at key-repeat speed
        session.term.wait_for(want, what="back on the kernel")
        session.drawn_for(left, bottom, "h")  # to the output code that holds the kernel
        session.bytes_for("Enter")  # show it: a long page to scroll
        focus = session.bytes_for("Tab")  # into the viewer
        pages = [session.bytes_for("PageDown") for _ in range(5)]
        lines = [session.bytes_for("j") for _ in range(3)]
        session.keys("q")
        session.term.wait_ended(what="q to end tcview and so ssh")

    move = statistics.median(m.total for m in moves)
    tree = statistics.median(m.total - m.viewer for m in moves)
    page, line = statistics.median(pages), statistics.median(lines)
    report = (
        f"ssh {SIZE[0]}x{SIZE[1]} {trace.parent.name}: startup {startup} B; "
        f"tree move median {move:.0f} B (max {max(m.total for m in moves)}), "
        f"of which outside the viewer {tree:.0f} B; "
        f"burst of 10 moves {burst} B ({burst / 10:.0f} B a move); "
        f"viewer page median {page:.0f} B, line {line:.0f} B; focus change {focus} B"
    )
    print(report)
    values = {"startup": startup, "move": move, "tree": tree, "burst": burst, "page": page}
    for key, value in values.items():
        record_property(f"bytes_{key}", value)
    # Over SSH the viewer shows an item on Enter (not on every move), so a move repaints
    # two tree lines and the status bar: well under 5 KB.
    assert move < TREE_MOVE_LIMIT, report
    assert tree < TREE_MOVE_LIMIT, report
    assert burst / 10 < TREE_MOVE_LIMIT, report
