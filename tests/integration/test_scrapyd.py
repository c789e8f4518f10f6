"""Deploy with scrapyd-deploy to a real scrapyd on loopback and run `web` as a job.

The egg is built from a copy of the project (scrapyd-deploy runs `setup.py clean`
and `bdist_egg` in the project folder, which must not touch the working tree), with
the project's own scrapy.cfg plus one `[deploy:loopback]` target pointing at this
test's scrapyd. scrapyd gets its own folders and config in tmp, binds 127.0.0.1 on
a free port, and stops by itself (coreutils `timeout`, and PDEATHSIG when the test
process dies) besides being stopped by PID at the end.
"""

from __future__ import annotations

import ctypes
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scripts.crawlrun import PROJECT_ROOT
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.components import FETCH_ERRORS, REPORT, with_components

LIFETIME_S = 240
SOURCES = ("crawlproj", "extensions", "setup.py", "scrapy.cfg")
JOB_ERRORS = ("Traceback", "ImportError", "ModuleNotFoundError", "FileNotFoundError")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def api(url: str, data: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    with urllib.request.urlopen(url, data=body, timeout=30) as reply:
        return json.loads(reply.read())


@pytest.fixture
def scrapyd(tmp_path: Path) -> Iterator[str]:
    """URL of a fresh scrapyd on 127.0.0.1 with all its state under tmp_path/scrapyd."""
    home = tmp_path / "scrapyd"
    home.mkdir()
    port = free_port()
    (home / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        f"bind_address = 127.0.0.1\nhttp_port = {port}\n"
        f"eggs_dir = {home / 'eggs'}\nlogs_dir = {home / 'logs'}\ndbs_dir = {home / 'dbs'}\n"
        "items_dir =\njobs_to_keep = 5\nmax_proc = 2\npoll_interval = 0.5\n"
    )
    cmd = ["timeout", "-s", "TERM", "-k", "5", str(LIFETIME_S), sys.executable, "-m", "scrapyd"]
    cmd += ["--pidfile=", "--logfile", str(home / "scrapyd.log")]
    proc = subprocess.Popen(
        cmd, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=_die_with_parent,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if api(url + "daemonstatus.json")["status"] == "ok":
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (
                        (home / "scrapyd.log").read_text()
                        if (home / "scrapyd.log").exists()
                        else ""
                    )
                    raise AssertionError(f"scrapyd did not start:\n{log[-3000:]}") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()  # our Popen (timeout), which forwards SIGTERM to scrapyd
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def project_copy(dest: Path, scrapyd_url: str) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in SOURCES:
        source = PROJECT_ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        else:
            shutil.copy2(source, dest / name)
    with open(dest / "scrapy.cfg", "a") as cfg:
        cfg.write(f"\n[deploy:loopback]\nurl = {scrapyd_url}\n")  # inherits project = crawlproj
    return dest


def deploy(project: Path) -> Path:
    """scrapyd-deploy to the loopback target; returns the egg it built and uploaded."""
    deploy_bin = Path(sys.executable).with_name("scrapyd-deploy")
    proc = subprocess.run(
        [str(deploy_bin), "loopback", "-v", "r1", "-d"],  # -d: keep the build dir (the egg)
        cwd=project, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["status"] == "ok", proc.stdout
    kept = [ln.split(": ", 1)[1] for ln in proc.stderr.splitlines() if "dir not removed" in ln]
    eggs = list(Path(kept[0]).glob("*.egg"))
    assert len(eggs) == 1, proc.stderr
    return eggs[0]


def check_egg(egg: Path) -> None:
    names = set(zipfile.ZipFile(egg).namelist())
    packages = ("crawlproj", "extensions", "extensions/frontier", "extensions/content",
                "crawlproj/spiders")  # fmt: skip
    for package in packages:
        assert f"{package}/__init__.py" in names, f"{package} missing from the egg"
    # Every Lua script of every package (frontier, content, re-crawl).
    lua = {str(p.relative_to(PROJECT_ROOT)) for p in PROJECT_ROOT.glob("extensions/**/*.lua")}
    assert {"extensions/content/lua/add.lua", "extensions/frontier/lua/lease.lua"} <= lua
    assert lua <= names, f"Lua files missing from the egg: {sorted(lua - names)}"


def check_imports_from_egg(egg: Path, cwd: Path) -> None:
    """What a scrapyd job imports comes from the egg (a zip), not this working tree,
    and the frontier's Lua scripts load from inside it."""
    code = (
        "import sys; from scrapyd.runner import activate_egg; activate_egg(sys.argv[1]); "
        "import crawlproj.settings, extensions.state.lua as lua; "
        "import extensions.content.simhash_index as index; "
        "print(crawlproj.__file__); print(len(lua.script_source('lease'))); "
        "print(len(index._lua_source('add.lua')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(egg)], cwd=cwd, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    where, lua_len, index_lua_len = proc.stdout.split()
    assert where.startswith(str(egg)), where
    assert int(lua_len) > 100 and int(index_lua_len) > 100


def wait_finished(url: str, job: str, timeout: float = 150) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = api(url + "listjobs.json?project=crawlproj")
        done = [j for j in jobs.get("finished", []) if j["id"] == job]
        if done:
            return done[0]
        time.sleep(0.5)
    raise AssertionError(f"job {job} not finished in {timeout}s: {jobs}")


def test_deploy_and_run_web_through_scrapyd(scrapyd: str, tmp_path: Path) -> None:
    egg = deploy(project_copy(tmp_path / "project", scrapyd))
    check_egg(egg)
    check_imports_from_egg(egg, tmp_path)
    assert api(scrapyd + "listspiders.json?project=crawlproj")["spiders"] == ["web"]
    spec = WebSpec(hosts=[HostSpec("one.test", pages=4), HostSpec("two.test", pages=3)])
    with TestWeb(spec, lifetime=180) as web:
        settings = {
            "DNS_HOSTS_MAP": json.dumps(web.hosts_map_setting()),
            "DNS_HOSTS_MAP_ONLY": "True",
            "DNS_ALLOWED_NETWORKS": "127.0.0.0/8",
            "FRONTIER_DELAY": "0.2",
            "CRAWL_DATA_DIR": str(tmp_path / "data"),
            **{k: json.dumps(v) for k, v in with_components(REPORT, FETCH_ERRORS).items()},
        }
        form = [("project", "crawlproj"), ("spider", "web"), ("seeds", ",".join(web.seeds))]
        form += [("setting", f"{k}={v}") for k, v in settings.items()]
        reply = api(scrapyd + "schedule.json", form)
        assert reply["status"] == "ok", reply
        wait_finished(scrapyd, reply["jobid"])
        requests = web.requests()
    log = tmp_path / "scrapyd" / "logs" / "crawlproj" / "web" / f"{reply['jobid']}.log"
    text = log.read_text()
    assert not [e for e in JOB_ERRORS if e in text], text[-4000:]
    assert "Spider closed (finished)" in text, text[-4000:]
    assert set(web.pages) <= {r["url"] for r in requests if r["status"] == 200}
    # The report extension ran from the egg; no feed, so it went to CRAWL_DATA_DIR.
    assert (tmp_path / "data" / f"web-{reply['jobid']}-report.html").exists()
