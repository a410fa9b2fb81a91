"""``lockgate.interrupt``: Ctrl-C and SIGTERM for the commands that write, with real signals."""

from __future__ import annotations

import os
import signal

import pytest

from lockgate import interrupt
from lockgate.errors import ExitCode, ShuttingDown
from lockgate.registry import copy as copying


def test_raising_turns_sigterm_into_a_keyboard_interrupt_naming_it_and_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt) as caught, interrupt.raising():
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()  # the handler raises before this returns
    assert interrupt.which(caught.value) == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is before


def test_graceful_records_the_first_signal_for_the_guard_and_stops_at_once_on_the_second() -> None:
    with interrupt.graceful() as interrupts:
        interrupts.guard()  # nothing yet
        os.kill(os.getpid(), signal.SIGINT)
        assert interrupts.received == signal.SIGINT and interrupts.stopping
        with pytest.raises(ShuttingDown, match=r"^interrupted by SIGINT: the pass stopped before") as stopped:
            interrupts.guard()
        assert stopped.value.exit_code is ExitCode.ABANDONED
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupted_copy_names_what_was_written_and_the_tags_not_written() -> None:
    result = copying.CopyResult("oci://src/app", "oci-layout:///mirror")
    result.count(copying.Step("blob", "sha256:a", 2))
    result.count(copying.Step("blob", "sha256:b", 1000, skipped=True))
    result.artifacts.append(copying.CopiedArtifact("sha256:c", "1.0.0", (), ()))
    said = copying.interrupted(result, ["1.1.0"], "SIGTERM")
    assert said.splitlines() == [
        "interrupted by SIGTERM: written to oci-layout:///mirror: "
        "1 blob(s) (2 bytes), 0 manifest(s) and 0 tag(s)",
        "  complete, with their signatures and referrers: 1.0.0",
        "  not written: 1.1.0 (a tag is written last, so nothing at the destination names an incomplete "
        "artifact); run the same copy again to complete it (what is there is skipped)",
    ]
    assert interrupt.Interrupted(said).exit_code is ExitCode.ABANDONED
