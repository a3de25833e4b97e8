"""Registry behaviour: lazy targets, duplicates, 'did you mean'."""

import pytest

from worldolympiad.registry import Registry, UnknownNameError


def test_lazy_target_is_imported_only_on_get():
    reg: Registry[object] = Registry("things")
    reg.register("join", "os.path:join")
    assert reg.describe("join")["name"] == "join"
    import os.path

    assert reg.get("join") is os.path.join


def test_duplicate_name_raises_value_error():
    reg: Registry[object] = Registry("things")
    reg.register("a", "os:getcwd")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", "os:getpid")
    reg.register("a", "os:getpid", override=True)
    import os

    assert reg.get("a") is os.getpid


def test_unknown_name_suggests_close_matches_and_lists_all():
    reg: Registry[object] = Registry("models")
    reg.register("videos", "os:getcwd")
    reg.register("reference", "os:getcwd")
    with pytest.raises(UnknownNameError) as e:
        reg.get("vidoes")
    msg = str(e.value)
    assert "Did you mean 'videos'" in msg and "reference" in msg


def test_decorator_registration_uses_docstring():
    reg: Registry[object] = Registry("things")

    @reg.register("f")
    def f():
        """Does f."""

    assert reg.get("f") is f
    assert reg.describe("f")["description"] == "Does f."
