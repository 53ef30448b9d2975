"""A three-node MariaDB Galera cluster on loopback for the scale-out tests: Debian's mariadbd
with the galera-4 provider, each node its own data directory, SQL port and group port, state
transfer by rsync; node 0 bootstraps the cluster, the others join it."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support.ports import free_port

PROVIDER = Path("/usr/lib/galera/libgalera_smm.so")
MARIADBD = "/usr/sbin/mariadbd"


def missing() -> str:
    """Why a cluster cannot run here, or '' when it can."""
    if not PROVIDER.exists():
        return f"galera-4 is not installed ({PROVIDER} missing): apt-get install galera-4"
    for tool in (MARIADBD, "mariadb-install-db", "mariadb", "rsync"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian packages mariadb-server, rsync)"
    return ""


class Node:
    def __init__(self, root: Path, index: int, group_ports: list[int]) -> None:
        self.dir = root / f"node{index}"
        self.data = self.dir / "data"
        self.socket = self.dir / "mysqld.sock"
        self.port = free_port()
        self.group = group_ports[index]
        self.cnf = self.dir / "my.cnf"
        self.dir.mkdir(parents=True)
        members = ",".join(f"127.0.0.1:{port}" for port in group_ports)
        self.cnf.write_text(f"""[mysqld]
user=root
datadir={self.data}
socket={self.socket}
port={self.port}
bind-address=127.0.0.1
pid-file={self.dir / "mysqld.pid"}
log-error={self.dir / "error.log"}
skip-name-resolve
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
innodb_flush_log_at_trx_commit=2
max_connections=300
wsrep_on=ON
wsrep_provider={PROVIDER}
wsrep_cluster_name=orbit_test
wsrep_cluster_address=gcomm://{members}
wsrep_node_address=127.0.0.1:{self.group}
wsrep_provider_options="base_port={self.group};ist.recv_addr=127.0.0.1:{free_port()};gcache.size=64M"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:{free_port()}
""")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, bootstrap: bool, install: bool = False) -> None:
        command = [MARIADBD, f"--defaults-file={self.cnf}"]
        if install:
            subprocess.run(
                [
                    "mariadb-install-db",
                    f"--defaults-file={self.cnf}",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                check=True,
                capture_output=True,
            )
        if bootstrap:
            command.append("--wsrep-new-cluster")
        with (self.dir / "stderr.log").open("wb") as err:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)

    def sql(self, statement: str) -> str:
        done = subprocess.run(
            ["mariadb", f"--socket={self.socket}", "-uroot", "-N", "-B", "-e", statement],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip())
        return done.stdout.strip()

    def wait_synced(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"node {self.dir.name} exited: {self.log()}")
            with contextlib.suppress(RuntimeError):
                if "Synced" in self.sql("SHOW STATUS LIKE 'wsrep_local_state_comment'"):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"node {self.dir.name} did not sync: {self.log()}")

    def log(self) -> str:
        found = [
            p.read_text(errors="replace")[-1500:]
            for p in (self.dir / "error.log", self.dir / "stderr.log")
            if p.exists()
        ]
        return "\n".join(found)

    def stop(self, clean: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            if clean:
                self.process.terminate()
            else:
                self.process.kill()
            self.process.wait(60)


@contextlib.contextmanager
def cluster(database: str) -> Iterator[list[str]]:
    """Three synced nodes with `database` and a user orbit/orbit; yields one URL per node.
    Node 0 is initialised and stopped cleanly, and its data directory copied to the other two:
    they join with the same state, so no state transfer (SST) is needed."""
    # the joiner's rsync daemon runs as nobody: its directories must be reachable and
    # writable for it (pytest's tmp_path is private to its user)
    root = Path(tempfile.mkdtemp(prefix="orbit-galera-"))
    root.chmod(0o755)
    group_ports = [free_port() for _ in range(3)]
    nodes = [Node(root, index, group_ports) for index in range(3)]
    try:
        nodes[0].start(bootstrap=True, install=True)
        nodes[0].wait_synced()
        nodes[0].sql(
            f"CREATE DATABASE {database} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; "
            "CREATE USER 'orbit'@'%' IDENTIFIED BY 'orbit'; "
            "GRANT ALL ON *.* TO 'orbit'@'%'"
        )
        nodes[0].stop(clean=True)
        for node in nodes[1:]:
            shutil.copytree(nodes[0].data, node.data)
            for path in (node.dir, node.data):
                path.chmod(0o777)
        nodes[0].start(bootstrap=True)
        nodes[0].wait_synced()
        for node in nodes[1:]:
            node.start(bootstrap=False)
        for node in nodes[1:]:
            node.wait_synced()
        yield [f"mysql+asyncmy://orbit:orbit@127.0.0.1:{node.port}/{database}" for node in nodes]
    finally:
        for node in reversed(nodes):
            node.stop()
        shutil.rmtree(root, ignore_errors=True)
