"""The shell's words for several nodes: ``cohort start --shared-storage``, ``cohort chaos
--node-kills``."""

import pytest

from actors.tools.cli import main


@pytest.mark.parametrize("command, flag, words", [
    ("start", "--shared-storage", "every node shares"),
    ("chaos", "--node-kills", "never the head"),
])
def test_the_node_flags_are_offered_and_explained(command, flag, words, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert flag in text and words in text
