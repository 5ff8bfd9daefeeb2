"""Task 7's scored data as the grading sandbox sees it (course/llm/cases/scored_data.py): the stand-in pydoc_data keeps
every training topic and replaces every held-out one, at its length, with docstrings that are neither the held-out
text nor the LoRA demo's; the twins share no docstring."""
import runpy

import pytest

from course.llm.cases.scored_data import scored_parts, stand_in_topics, stand_ins
from course_lib import llm as llm_defaults
from course_lib.llm import help_topics, is_held_out, split_topics, stdlib_docstrings

pytestmark = pytest.mark.fast


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """(the installed pydoc_data folder, the stand-in's folder)."""
    (installed, stand_in), = stand_ins(tmp_path_factory.mktemp("stand-ins"))
    return installed, stand_in


def test_the_stand_in_package_holds_the_shown_topics_and_the_installed_files(package):
    installed, stand_in = package
    assert runpy.run_path(str(stand_in / "topics.py"))["topics"] == stand_in_topics()["shown"]
    assert sorted(path.name for path in stand_in.iterdir()) == \
        sorted(path.name for path in installed.iterdir() if path.name != "__pycache__")


def test_training_topics_are_the_originals_and_held_out_ones_are_replaced_at_their_length():
    real = help_topics()
    for name, topics in stand_in_topics().items():
        assert split_topics(topics)[0] == split_topics()[0], name  # the tokenizer and training see the same text
        for topic, text in topics.items():
            assert (text == real[topic]) != is_held_out(topic), (name, topic)
            assert len(text) == len(real[topic]), (name, topic)


def test_the_stand_ins_hold_no_line_of_the_held_out_text_nor_of_the_lora_docstrings():
    held_out = {line for line in split_topics()[1].splitlines() if len(line) > 40}
    adapt = {line for text in stdlib_docstrings() for line in text.splitlines() if len(line) > 40}
    shown, unseen = (split_topics(topics)[1] for topics in stand_in_topics().values())
    for text in (shown, unseen):
        lines = {line for line in text.splitlines() if len(line) > 40}
        assert not lines & held_out and len(lines & adapt) < 5
    shown_lines, unseen_lines = ({line for line in text.splitlines() if len(line) > 40} for text in (shown, unseen))
    assert len(shown_lines & unseen_lines) < 0.1 * len(shown_lines)  # 38 of 613 in 3.11: lines of near-copies


def test_the_scored_parts_are_the_check_s_length():
    assert {len(text) for text in scored_parts().values()} == {llm_defaults.EVAL_CHARS}
