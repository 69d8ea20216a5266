from feltlab import native


def test_core_loads():
    assert native.core_info()["version"] == "0.1.0"
