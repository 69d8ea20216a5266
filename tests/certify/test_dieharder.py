"""dieharder where installed (issue 39 item 7): the planning logic and the parser run
everywhere; the runs against the real program skip with a reason when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from feltlab import native
from feltlab.rig.certify.dieharder import (
    PIPE_SLACK,
    Calibration,
    DieharderError,
    calibrate,
    find_dieharder,
    parse_output,
    plan,
    run_file,
)

needs_dieharder = pytest.mark.skipif(
    find_dieharder() is None, reason="dieharder is not installed (apt-get install dieharder)"
)

#: dieharder 3.31.1's output, as it printed it here: a rewind note on its own line and one
#: after a result, the two p-values per tuple size of the generalized serial test
OUTPUT = """\
#=============================================================================#
#            dieharder version 3.31.1 Copyright 2003 Robert G. Brown          #
#=============================================================================#
   rng_name    |           filename             |rands/second|
 file_input_raw|             /tmp/h39d-small.bin|  1.20e+07  |
#=============================================================================#
        test_name   |ntup| tsamples |psamples|  p-value |Assessment
#=============================================================================#
# The file file_input_raw was rewound 2 times
          sts_serial|   1|    100000|       1|0.11998661|  PASSED  
          sts_serial|   3|    100000|       1|0.46045674|  PASSED  
          sts_serial|   3|    100000|       1|0.54877013|  PASSED  
          sts_serial|   8|    100000|       1|0.00412355|   WEAK   
   diehard_birthdays|   0|       100|       2|0.73603515|  PASSED  # The file file_input_raw was rewound 20 times
"""  # noqa: W291, E501


def test_parse_output() -> None:
    rows, rewinds = parse_output(OUTPUT)
    assert rewinds == 22
    assert [(r.name, r.ntup, r.tsamples, r.psamples, r.p_value, r.assessment) for r in rows] == [
        ("sts_serial", 1, 100000, 1, 0.11998661, "PASSED"),
        ("sts_serial", 3, 100000, 1, 0.46045674, "PASSED"),
        ("sts_serial", 3, 100000, 1, 0.54877013, "PASSED"),
        ("sts_serial", 8, 100000, 1, 0.00412355, "WEAK"),
        ("diehard_birthdays", 0, 100, 2, 0.73603515, "PASSED"),
    ]
    with pytest.raises(DieharderError, match="no result"):
        parse_output("dieharder: unknown option\n")


def test_plan_marks_a_test_that_would_rewind_invalid() -> None:
    # the birthday test read 4,153,344 bytes a p-sample here (measured, -g 200)
    birthdays = Calibration(0, PIPE_SLACK, 4_153_344)
    assert birthdays.bytes_needed(100) == 8192 + 415_334_400
    short, enough = plan([birthdays], 100, 10**6)[0], plan([birthdays], 1, 5 * 10**6)[0]
    assert not short.runnable and short.bytes_needed == 415_342_592
    assert short.reason is not None and "needs 415342592 bytes for 100 p-samples" in short.reason
    assert "the file holds 1000000" in short.reason
    assert enough.runnable and enough.reason is None
    # exactly the bytes needed is enough; one fewer is not
    assert plan([birthdays], 1, 4_161_536)[0].runnable
    assert not plan([birthdays], 1, 4_161_535)[0].runnable
    with pytest.raises(ValueError, match="at least 1"):
        birthdays.bytes_needed(0)


def test_absent_dieharder_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_dieharder() is None
    with pytest.raises(DieharderError, match="apt-get install dieharder"):
        calibrate(100)


@needs_dieharder
def test_real_dieharder_never_rewinds(tmp_path: Path) -> None:
    cal = calibrate(100)  # sts_monobit: 100,000 draws a p-sample
    # linear in p-samples: a p-sample reads at least its 100,000 32-bit words
    assert cal.per_psample >= 400_000 and cal.fixed <= 2 * PIPE_SLACK
    need = cal.bytes_needed(1)
    data = native.ChaCha20(5).keystream(need)
    enough = tmp_path / "enough.bin"
    enough.write_bytes(data)
    [ran] = run_file(enough, [100], psamples=1, calibrations=[cal])
    assert ran.invalid is None and ran.name == "sts_monobit" and len(ran.p_values) == 1
    assert 0.0 <= ran.p_values[0] <= 1.0
    record = ran.to_record()
    assert record["verdict"] in ("PASS", "WEAK", "FAIL") and record["bytes_needed"] == need
    # too short by a p-sample: refused by the plan, with the bytes it needs
    short = tmp_path / "short.bin"
    short.write_bytes(data[: need - cal.per_psample])
    [refused] = run_file(short, [100], psamples=1, calibrations=[cal])
    assert refused.to_record()["verdict"] == "INVALID" and refused.p_values == ()
    assert f"needs {need} bytes" in (refused.invalid or "")
    # a plan that lies (a calibration claiming 1 byte): dieharder's rewind is caught anyway
    [caught] = run_file(short, [100], psamples=1, calibrations=[Calibration(100, 1, 0)])
    assert caught.invalid is not None and "rewound the file" in caught.invalid
    assert caught.p_values == ()


def test_certify_rng_dieharder_needs_the_program(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from feltlab.cli import main

    f = tmp_path / "w.bin"
    f.write_bytes(native.ChaCha20(1).keystream(20_000))
    monkeypatch.setenv("PATH", str(tmp_path))
    r = CliRunner().invoke(
        main, ["certify", "rng", str(f), "--bits", "20000", "--dieharder", "100",
               "--out", str(tmp_path / "o")],
    )  # fmt: skip
    assert r.exit_code == 2 and "dieharder is not installed" in r.output
    r = CliRunner().invoke(main, ["certify", "rng", str(f), "--dieharder", "x,1"])
    assert r.exit_code == 2 and "dieharder's -d numbers" in r.output


@needs_dieharder
def test_certify_rng_records_dieharder_beside_sp800_22(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from feltlab.cli import main

    f = tmp_path / "w.bin"
    # the calibrations measured here: birthdays about 4.17 MB a p-sample, sts_monobit 4.41 MB
    f.write_bytes(native.ChaCha20(9).keystream(4_300_000))
    r = CliRunner().invoke(
        main, ["certify", "rng", str(f), "--sequences", "1", "--bits", "1000000",
               "--dieharder", "100,0", "--dieharder-psamples", "1", "--out", str(tmp_path / "o"),
               "--json"],
    )  # fmt: skip
    assert r.exit_code in (0, 1, 3), r.output
    section = json.loads(r.output)["record"]["dieharder"]
    monobit, birthdays = section["tests"]
    assert birthdays["test"] == "diehard_birthdays" and birthdays["not_run"] is None
    assert birthdays["verdict"] in ("PASS", "WEAK", "FAIL") and len(birthdays["p_values"]) == 1
    assert birthdays["bytes_needed"] <= 4_300_000
    assert monobit["test"] == "sts_monobit" and monobit["verdict"] == "INVALID"
    assert monobit["p_values"] == [] and monobit["bytes_needed"] > 4_300_000
    assert "the file holds 4300000" in monobit["not_run"]
