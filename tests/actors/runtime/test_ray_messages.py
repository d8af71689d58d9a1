"""A ``cohort`` command's terminal shows its own progress: the raylet's messages to the driver
(worker pool warnings, retried tasks after a kill) go to a log file instead."""

from __future__ import annotations

from ray._private import worker

from actors.runtime.ray_driver import keep_ray_messages_in_log


def test_the_raylets_messages_go_to_the_log_and_everything_else_is_printed(tmp_path, capsys):
    log = tmp_path / "ray-messages.log"
    original = worker.print_to_stdstream
    keep_ray_messages_in_log(str(log))
    try:
        worker.print_to_stdstream({"lines": ["raylet-line-one: 16 PYTHON worker processes"],
                                   "pid": "raylet", "is_err": False}, ignore_prefix=False)
        worker.print_to_stdstream({"lines": ["a worker's own line"], "pid": 4242,
                                   "is_err": False, "ip": "127.0.0.1", "actor_name": "x",
                                   "task_name": "", "job": "01000000"}, ignore_prefix=True)
        keep_ray_messages_in_log(str(log))  # a second call wraps Ray's function, not its own
        worker.print_to_stdstream({"lines": ["raylet-line-two: Task failed"], "pid": "raylet",
                                   "is_err": False}, ignore_prefix=False)
    finally:
        worker.print_to_stdstream = original
    out = capsys.readouterr()
    # (the session's own Ray may print real raylet lines meanwhile: only ours are looked for)
    assert "raylet-line-one" not in out.out + out.err
    assert "raylet-line-two" not in out.out + out.err
    assert "a worker's own line" in out.out + out.err
    kept = log.read_text()
    assert "raylet-line-one" in kept and "raylet-line-two" in kept
