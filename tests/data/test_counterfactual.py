"""CDA, the polarity check, tuple files, the CounterfactualTuples DataModule and the benchmark readers."""

from __future__ import annotations

import json

import pytest

from faircl.data.base import DataError
from faircl.data.counterfactual import (
    CDA,
    AttributeLexicon,
    CounterfactualTuples,
    make_cda_tuples,
    occurrences,
    polarity,
    polarity_check,
    read_tuple_file,
    write_tuple_file,
)
from faircl.eval.bias_datasets import load_crows_pairs, load_grep_bias_ir, load_seat, load_stereoset_intrasentence


@pytest.fixture(scope="module")
def lex() -> AttributeLexicon:
    lex = AttributeLexicon.gender(lists="builtin", keep=None)
    lex.keep.add("nurse")
    lex.add_pairs([("john", "mary"), ("will", "krystal")], names=True)
    return lex


@pytest.fixture(scope="module")
def cda(lex) -> CDA:
    return CDA(lex)


# (source, male, female, neutral)
CASES = [
    # case
    ("He is here.", "He is here.", "She is here.", "They are here."),
    ("HE SAID NO.", "HE SAID NO.", "SHE SAID NO.", "THEY SAID NO."),
    ("the king smiled", "the king smiled", "the queen smiled", "the monarch smiled"),
    # punctuation around the word
    ("(she) left; her mother, too!", "(he) left; his father, too!", "(she) left; her mother, too!",
     "(they) left; their parent, too!"),
    # possessives and contractions
    ("John's mother's car", "John's father's car", "Mary's mother's car", "The person's parent's car"),
    ("The boys' room", "The boys' room", "The girls' room", "The children' room"),
    ("He's late.", "He's late.", "She's late.", "They're late."),
    # her / his: determiner vs pronoun
    ("I gave her a book.", "I gave him a book.", "I gave her a book.", "I gave them a book."),
    ("I saw her dog.", "I saw his dog.", "I saw her dog.", "I saw their dog."),
    ("The book is his.", "The book is his.", "The book is hers.", "The book is theirs."),
    # names (capitalised only; an ambiguous name word at a sentence start is a word)
    ("Will he come? Ask John.", "Will he come? Ask John.", "Will she come? Ask Mary.",
     "Will they come? Ask the person."),
    ("We will ask Mary.", "We will ask John.", "We will ask Mary.", "We will ask the person."),
    # neutral words are left alone, including kept words and compounds
    ("The nurse met a man-made chairman.", "The nurse met a man-made chairman.",
     "The nurse met a man-made chairwoman.", "The nurse met a man-made chairperson."),
    ("A manager spoke.", "A manager spoke.", "A manager spoke.", "A manager spoke."),
    # verb agreement and deletion in the neutral version
    ("She works there.", "He works there.", "She works there.", "They work there."),
    ("The highest female legislators.", "The highest male legislators.", "The highest female legislators.",
     "The highest legislators."),
]


@pytest.mark.parametrize("source,male,female,neutral", CASES)
def test_cda_table(cda, source, male, female, neutral):
    assert cda(source) == (male, female, neutral)


def test_cda_versions_and_bad_version(cda):
    assert cda.versions == ("male", "female", "neutral")
    assert cda.rewrite("he", "female") == "she"
    with pytest.raises(ValueError, match="not one of"):
        cda.rewrite("he", "other")


def test_lexicon_keep_list_wins(lex):
    assert lex.group_of("nurse") is None
    assert lex.group_of("john", capitalised=False) is None and lex.group_of("John") == 0  # names need a capital
    assert lex.counterpart("he", 1) == "she"


def test_lexicon_formats(tmp_path):
    (tmp_path / "m.txt").write_text("he\nking\nhis\n")
    (tmp_path / "f.txt").write_text("she\nqueen\nher\n")
    (tmp_path / "pairs.json").write_text(json.dumps([["aunt", "uncle"]]))
    (tmp_path / "bb.json").write_text(json.dumps({"gender": [["actor", "actress"]]}))
    (tmp_path / "pairs.tsv").write_text("cowboy\tcowgirl\n")
    lex = AttributeLexicon(("male", "female"))
    assert lex.add_aligned_files({"male": tmp_path / "m.txt", "female": tmp_path / "f.txt"}) == 3
    assert lex.add_json_pairs(tmp_path / "pairs.json", order=("female", "male")) == 1
    assert lex.add_json_pairs(tmp_path / "bb.json", key="gender") == 1
    assert lex.add_tsv_pairs(tmp_path / "pairs.tsv") == 1
    assert lex.counterpart("aunt", 0) == "uncle" and lex.group_of("aunt") == 1
    assert lex.counterpart("cowgirl", 0) == "cowboy" and lex.counterpart("actor", 1) == "actress"
    (tmp_path / "short.txt").write_text("she\n")
    with pytest.raises(DataError, match="different numbers of lines"):
        lex.add_aligned_files({"male": tmp_path / "m.txt", "female": tmp_path / "short.txt"})
    with pytest.raises(DataError, match="pass key="):
        lex.add_json_pairs(tmp_path / "bb.json")
    with pytest.raises(ValueError, match="reserved"):
        AttributeLexicon(("male", "neutral"))


def test_three_groups():
    lex = AttributeLexicon(("christian", "muslim", "jewish"), neutral={"church": "house of worship"})
    lex.add_pairs([("church", "mosque", "synagogue"), ("christians", "muslims", "jews")])
    cda = CDA(lex)
    assert cda("The church helped christians.") == (
        "The church helped christians.", "The mosque helped muslims.", "The synagogue helped jews.",
        "The house of worship helped christians.")
    assert polarity("The mosque and the synagogue near the synagogue.", lex) == 2


def test_occurrences_and_polarity(lex):
    assert occurrences("He and his son met her.", lex) == [3, 1]
    assert polarity("He and his son met her.", lex) == 0
    assert polarity("He met her.", lex) == -1  # tie
    assert polarity("They met.", lex) == 2  # no attribute word: neutral


def test_polarity_check_counts(lex):
    tuples = [
        ("He runs.", "She runs.", "They run."),  # passes
        ("He runs.", "He runs.", "They run."),  # female version wrong
        ("He runs.", "She runs.", "He runs."),  # neutral version wrong
        ("She runs.", "He runs.", "They run."),  # male and female wrong
    ]
    kept, report, passed = polarity_check(tuples, lex)
    assert passed == [True, False, False, False]
    assert kept == [tuples[0]]
    assert (report.total, report.kept, report.dropped) == (4, 1, 3)
    assert report.version_correct == [3, 2, 3]
    assert report.union_accuracy == pytest.approx(0.25)
    d = report.as_dict()
    assert d["polarity_accuracy/female"] == pytest.approx(0.5) and d["tuples_dropped"] == 3
    with pytest.raises(DataError, match="tuple 0 has 2 versions"):
        polarity_check([("a", "b")], lex)


def test_make_cda_tuples_counts_skips_and_failures(cda):
    texts = ["The sun rose over the hill.",  # no attribute word: skipped
             "He met the goddess of the sea.",  # goddess has a counterpart but 'god' … neutral 'deity': passes
             "He met the fella at the door today.",  # 'fella' unknown: passes (only 'he')
             "His landlord met him today at noon."]
    lex2 = cda.lexicon
    kept, report = make_cda_tuples(texts, cda, min_words=3)
    assert report.skipped_no_attribute == 1
    assert report.total == 3 and report.kept == len(kept)
    # A word with a counterpart but no neutral form makes the neutral version fail.
    lex3 = AttributeLexicon(("male", "female"))
    lex3.add_pairs([("he", "she"), ("sir", "madam")])
    kept3, report3 = make_cda_tuples(["Yes sir, he said."], CDA(lex3), min_words=1)
    assert kept3 == [] and report3.dropped == 1 and report3.version_correct == [1, 1, 0]
    assert lex2 is cda.lexicon


def test_tuple_file_roundtrip(tmp_path):
    tuples = [("He runs.", "She runs.", "They run."), ("A man, here.", "A woman, here.", "A person, here.")]
    versions = ("male", "female", "neutral")
    for name in ("t.csv", "t.jsonl"):
        path = write_tuple_file(tmp_path / name, tuples, versions)
        assert read_tuple_file(path, versions) == tuples
    (tmp_path / "bad.csv").write_text("male,female\nHe,She\n")
    with pytest.raises(DataError, match="lacks column"):
        read_tuple_file(tmp_path / "bad.csv", versions)
    (tmp_path / "empty.csv").write_text("male,female,neutral\nHe,,They\n")
    with pytest.raises(DataError, match="row 0: empty"):
        read_tuple_file(tmp_path / "empty.csv", versions)


def _inline_texts(n: int = 40) -> list[str]:
    subjects = ["He", "She"]
    jobs = ["nurse", "doctor", "pilot", "teacher", "engineer"]
    return [f"{subjects[i % 2]} worked as a {jobs[i % 5]} for {i + 2} years in the city." for i in range(n)]


def test_datamodule_batches(tmp_path):
    dm = CounterfactualTuples(inline_texts=_inline_texts(), word_lists="builtin", keep_words=None, batch_size=4,
                              val_fraction=0.2, test_fraction=0.2, split_sentences=False)
    dm.setup("fit")
    assert dm.num_groups == 2 and dm.group_names == ["male", "female"] and dm.versions[-1] == "neutral"
    assert dm.polarity_report.total == 40 and dm.polarity_report.kept == 40
    sizes = {k: len(v) for k, v in dm.splits.items()}
    assert sizes == {"train": 24, "val": 8, "test": 8}
    batch = next(iter(dm.train_dataloader()))
    assert len(batch["x"]) == 3 and all(len(v) == 4 for v in batch["x"])
    assert all(s.startswith("He ") for s in batch["x"][0]) and all(s.startswith("They ") for s in batch["x"][2])
    assert batch["y"].tolist() == [0] * 4 and batch["a"].tolist() == [-1] * 4 and len(batch["idx"]) == 4
    # Held-out tuples are disjoint from the training ones.
    train = {t[0] for t in dm.splits["train"].x}
    assert not train & {t[0] for t in dm.splits["test"].x}


def test_datamodule_tuple_file_drops_failures(tmp_path):
    path = write_tuple_file(tmp_path / "t.csv", [("He ran.", "She ran.", "They ran.")] * 3
                            + [("He ran.", "He ran.", "They ran.")], ("male", "female", "neutral"))
    dm = CounterfactualTuples(source="file", tuple_file=str(path), word_lists="builtin", keep_words=None,
                              val_fraction=0.34, test_fraction=0.34, batch_size=2)
    dm.setup("fit")
    assert dm.polarity_report.dropped == 1 and dm.polarity_report.union_accuracy == pytest.approx(0.75)
    assert sum(len(s) for s in dm.splits.values()) == 3


def test_datamodule_tuple_file_other_groups(tmp_path):
    rows = [(f"The church {i}.", f"The mosque {i}.", f"The synagogue {i}.", f"The house of worship {i}.")
            for i in range(6)]
    versions = ("christian", "muslim", "jewish", "neutral")
    path = write_tuple_file(tmp_path / "r.jsonl", rows, versions)
    kw = dict(source="file", tuple_file=str(path), groups=list(versions[:3]), word_lists="builtin", keep_words=None,
              val_fraction=0.34, test_fraction=0.34, batch_size=2)
    with pytest.raises(ValueError, match="polarity_filter=False"):
        CounterfactualTuples(**kw).setup("fit")
    dm = CounterfactualTuples(polarity_filter=False, **kw)
    dm.setup("fit")
    assert dm.num_groups == 3 and dm.versions == versions
    assert len(next(iter(dm.train_dataloader()))["x"]) == 4


def test_datamodule_errors(tmp_path):
    with pytest.raises(ValueError, match="needs texts"):
        CounterfactualTuples()
    with pytest.raises(ValueError, match="tuple_file"):
        CounterfactualTuples(source="file")
    dm = CounterfactualTuples(texts=[str(tmp_path / "missing.csv")], word_lists="builtin", keep_words=None)
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        dm.setup("fit")
    with pytest.raises(FileNotFoundError, match="need data_dir"):
        AttributeLexicon.gender(None, "adept")


def test_real_word_lists_and_bios(data_dir):
    dm = CounterfactualTuples(data_dir=str(data_dir), texts=["bias_in_bios_samples/nurse.csv",
                                                             "bias_in_bios_samples/surgeon.csv"], batch_size=8)
    dm.setup("fit")
    report = dm.polarity_report
    assert report.total > 20 and 0.7 < report.union_accuracy <= 1.0 and report.skipped_no_attribute > 0
    lex = dm.lexicon()
    assert len(lex) > 1000 and lex.group_of("countrywoman") == 1 and lex.group_of("baker") is None
    for tup in dm.splits["train"].x:
        assert [polarity(s, lex) for s in tup] == [0, 1, 2]


def test_benchmark_readers(data_dir):
    seat = load_seat(data_dir / "seat" / "sent-weat6.jsonl")
    assert seat.name == "sent-weat6" and seat.categories[0] == "MaleNames" and len(seat.targ1) > 10
    crows = load_crows_pairs(data_dir / "crows_pairs" / "crows_pairs_anonymized.csv")
    assert len(crows) == 262 and {c.bias_type for c in crows} == {"gender"}
    ss = load_stereoset_intrasentence(data_dir / "stereoset" / "test.jsonl")
    assert ss and all(i.bias_type == "gender" and "BLANK" in i.context for i in ss)
    ss2 = load_stereoset_intrasentence(data_dir / "stereoset" / "gender_test.json")
    assert len(ss2) == 253
    queries = load_grep_bias_ir(data_dir / "grep_bias_ir")
    cats = {q.category for q in queries}
    assert "Sex & Relationship" in cats and "Child Care" in cats and len(cats) == 7
    assert sum(len(q.documents) for q in queries) == 702
    assert {g for q in queries for g in q.genders} >= {"F", "M", "N"}


def test_benchmark_reader_errors(tmp_path):
    (tmp_path / "seat.jsonl").write_text(json.dumps({"targ1": {"examples": ["a"]}}))
    with pytest.raises(DataError, match="'targ2'"):
        load_seat(tmp_path / "seat.jsonl")
    (tmp_path / "crows.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="needs columns"):
        load_crows_pairs(tmp_path / "crows.csv")
    with pytest.raises(FileNotFoundError):
        load_grep_bias_ir(tmp_path)
