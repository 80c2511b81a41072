"""`vhd serve` registers the nightly deployment; the Prefect API reports its schedule."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
VHD = str(Path(sys.executable).parent / "vhd")


def test_serve_registers_a_deployment_with_the_schedule(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client

    process = subprocess.Popen([VHD, "serve", "--cron", "30 3 * * *", "--timezone", "Europe/Paris",
                                "--name", "nightly-test", "--warehouse", str(tmp_path / "wh"), "--count", "40",
                                "--families", "lp", "--workers", "2"],
                               env={**os.environ, "PREFECT_API_URL": prefect_server}, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        deployment = None
        deadline = time.monotonic() + 90
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline and deployment is None:
                try:
                    deployment = client.read_deployment_by_name("nightly/nightly-test")
                except Exception:
                    time.sleep(1)
                    assert process.poll() is None, process.stdout.read()
        assert deployment is not None, "the deployment never appeared"
        (schedule,) = deployment.schedules
        assert schedule.schedule.cron == "30 3 * * *"
        assert schedule.schedule.timezone == "Europe/Paris"
        assert deployment.parameters["warehouse"].endswith("wh")
        # the night's date is taken in the schedule's zone; the rest as given
        assert {k: deployment.parameters[k] for k in ("timezone", "count", "families", "setter", "workers")} == \
            {"timezone": "Europe/Paris", "count": 40, "families": "lp", "setter": "template", "workers": 2}
        assert deployment.global_concurrency_limit.limit == 1  # two nightlies never overlap
        assert deployment.concurrency_options.collision_strategy == "ENQUEUE"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.parametrize(("extra", "message"), [
    (["--families", "nosuch"], "unknown family 'nosuch'"),
    (["--count", "0"], "count must be a positive integer"),
    (["--setter", "litellm"], "needs --model"),
    (["--timezone", "Mars/Olympus"], "Mars/Olympus"),
])
def test_serve_refuses_bad_settings_in_one_line_before_serving(prefect_server, extra, message):
    result = subprocess.run([VHD, "serve", *extra], env={**os.environ, "PREFECT_API_URL": prefect_server},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
