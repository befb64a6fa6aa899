"""Small synthetic copies of the quality benchmark's suites, in each suite's exact file layout and schema.

Each builder writes into ``<cache>/<suite>/`` what the suite's loader reads as if it had come from
the Hugging Face hub, and returns the right answers, so tests can script a model that answers
right and one that answers wrong.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

PAYMENTS = [  # payments.csv: a few of DABstep's columns, their real names
    {"psp_reference": "1001", "merchant": "Crossfit_Hanna", "card_scheme": "NexPay", "year": "2023",
     "eur_amount": "1200.50", "is_fraudulent_dispute": "False", "issuing_country": "NL"},
    {"psp_reference": "1002", "merchant": "Belles_cookbook_store", "card_scheme": "GlobalCard", "year": "2023",
     "eur_amount": "30.25", "is_fraudulent_dispute": "True", "issuing_country": "BE"},
    {"psp_reference": "1003", "merchant": "Crossfit_Hanna", "card_scheme": "NexPay", "year": "2023",
     "eur_amount": "2500.00", "is_fraudulent_dispute": "False", "issuing_country": "NL"},
]


def _csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def dabstep(cache: Path, withheld: bool = False) -> dict[str, str]:
    """data/context/* and data/tasks/{dev,all}.jsonl; returns {task_id: right answer}."""
    context = cache / "dabstep" / "data" / "context"
    _csv(context / "payments.csv", PAYMENTS)
    (context / "fees.json").write_text(json.dumps([{"ID": 1, "card_scheme": "NexPay", "fixed_amount": 0.1, "rate": 19}]))
    (context / "merchant_data.json").write_text(json.dumps([{"merchant": "Crossfit_Hanna", "account_type": "F"}]))
    _csv(context / "acquirer_countries.csv", [{"acquirer": "gringotts", "country_code": "GB"}])
    _csv(context / "merchant_category_codes.csv", [{"mcc": "5942", "description": "Book Stores"}])
    (context / "manual.md").write_text("# Merchant guide\nA fraudulent dispute is a chargeback.\n")
    (context / "payments-readme.md").write_text("psp_reference: the payment's id\neur_amount: the amount in euro\n")
    answers = {"1": "3", "2": "3730.75", "3": "Crossfit_Hanna", "4": "BE, NL"}
    rows = [
        {"task_id": "1", "question": "How many transactions are there?", "level": "easy", "answer": "3",
         "guidelines": "Answer with a number."},
        {"task_id": "2", "question": "What is the total eur_amount in 2023?", "level": "easy", "answer": "3730.75",
         "guidelines": "Answer with a number rounded to 2 decimals."},
        {"task_id": "3", "question": "Which merchant has the most transactions?", "level": "easy",
         "answer": "Crossfit_Hanna", "guidelines": "Answer with the merchant name."},
        {"task_id": "4", "question": "Which issuing countries appear?", "level": "hard", "answer": "BE, NL",
         "guidelines": "Answer with a comma separated list, sorted."},
    ]
    _jsonl(cache / "dabstep" / "data" / "tasks" / "dev.jsonl", rows)
    _jsonl(cache / "dabstep" / "data" / "tasks" / "all.jsonl", [dict(row, answer="") for row in rows])
    return answers


def dabench(cache: Path) -> dict[str, str]:
    """da-dev-questions.jsonl, da-dev-labels.jsonl, da-dev-tables/*.csv; returns {id: right response}."""
    root = cache / "dabench"
    _csv(root / "da-dev-tables" / "test_ave.csv", [{"Fare": "10.0", "Age": "20"}, {"Fare": "30.0", "Age": "40"}])
    _csv(root / "da-dev-tables" / "2014_q4.csv", [{"Close Price": "5"}, {"Close Price": "7"}, {"Close Price": "9"}])
    questions = [
        {"id": 0, "question": "Calculate the mean fare paid by the passengers.", "concepts": ["Summary Statistics"],
         "constraints": "Round to two decimal places.", "format": "@mean_fare[mean_fare_value]",
         "file_name": "test_ave.csv", "level": "easy"},
        {"id": 9, "question": "Calculate the mean and the maximum of the \"Close Price\" column.",
         "concepts": ["Summary Statistics"], "constraints": "Two decimals.",
         "format": "@mean_close_price[mean_value] @max_close_price[max_value]", "file_name": "2014_q4.csv",
         "level": "medium"},
    ]
    labels = [{"id": 0, "common_answers": [["mean_fare", "20.00"]]},
              {"id": 9, "common_answers": [["mean_close_price", "7.00"], ["max_close_price", "9"]]}]
    _jsonl(root / "da-dev-questions.jsonl", questions)
    _jsonl(root / "da-dev-labels.jsonl", labels)
    return {"0": "@mean_fare[20.00]", "9": "@mean_close_price[7.00] @max_close_price[9]"}


def label_of(number: int) -> str:
    """The label of instance ``question <number>`` in the synthetic OOLONG context."""
    return ("entity", "entity", "entity", "human being", "location")[number % 5]


def oolong(cache: Path, lines: int = 4000) -> dict[str, str]:
    """oolong-synth/validation.jsonl with the dataset's columns; a context far longer than a prompt, whose
    instances carry no labels (``context_window_text_with_labels`` has them), as in the dataset."""
    head = "The following lines contain questions; each is one of 'entity', 'human being' or 'location'."
    plain, labelled = [head], [head]
    counts: dict[str, int] = {}
    for number in range(lines):
        label = label_of(number)
        counts[label] = counts.get(label, 0) + 1
        line = f"Date: Jan 0{1 + number % 9}, 2023 || User: {number % 97} || Instance: question {number}"
        plain.append(line)
        labelled.append(f"{line} || Label: {label}")
    text = "\n".join(plain)
    common = {"context_len": len(text) // 4, "dataset": "trec_coarse", "context_window_id": 7, "num_labels": 3,
              "context_window_text": text, "context_window_text_with_labels": "\n".join(labelled),
              "input_subset": "False"}
    rows = [
        dict(common, id=1, question="Which label is most common? Give your final answer in the form 'Label: answer'.",
             answer="['entity']", answer_type="ANSWER_TYPE.LABEL", task_group="counting",
             task="TASK_TYPE.MOST_FREQ"),
        dict(common, id=2, question="How many data points should be classified as label 'location'? "
             "Give your final answer in the form 'Answer: number'.", answer=f"[{counts['location']}]",
             answer_type="ANSWER_TYPE.NUMERIC", task_group="counting", task="TASK_TYPE.NUMERIC_ONE_CLASS"),
    ]
    _jsonl(cache / "oolong" / "oolong-synth" / "validation.jsonl", rows)
    return {"1": "Label: entity", "2": f"Answer: {counts['location']}"}
