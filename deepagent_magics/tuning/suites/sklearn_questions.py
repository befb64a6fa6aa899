"""The questions of the offline suite (`sklearn_data`), each with the reference code that answers it.

A question is what a notebook user asks of scikit-learn's bundled datasets: aggregates,
group-bys, correlations, outliers, a fitted model's metric, a file to write, text only a
language model can read (``llm_query``), work to hand to sub-agents. No answer is typed in:
each is computed here, by ``reference(data)``, from the same tables the systems get
(``data``: {name: DataFrame or list}), and formatted as the question asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

IRIS_SPECIES = ("setosa", "versicolor", "virginica")  # load_iris's target 0, 1, 2


@dataclass(frozen=True)
class Question:
    id: str
    datasets: tuple[str, ...]  # the variables (and files) the task starts with
    kind: str  # aggregate, groupby, correlation, outlier, model, file, llm_query, subagent
    level: str  # easy or hard
    text: str
    answer_format: str
    reference: Callable[[dict[str, Any]], Any]
    writes: tuple[str, ...] = field(default=())  # files the answer must come with


def r(value: Any, places: int) -> str:
    return f"{float(value):.{places}f}"


def features(frame: Any) -> list[str]:
    return [column for column in frame.columns if column != "target"]


def _top_pair(frame: Any) -> str:
    corr = frame[features(frame)].corr().abs()
    pairs = [(corr.loc[a, b], a, b) for i, a in enumerate(corr.columns) for b in corr.columns[i + 1:]]
    _, a, b = max(pairs)
    return ", ".join(sorted((a, b)))


def _iqr_mask(series: Any) -> Any:
    """Whether each value lies outside Tukey's fences (1.5 IQR below the first or above the third quartile)."""
    q1, q3 = series.quantile(0.25), series.quantile(0.75)
    spread = q3 - q1
    return (series < q1 - 1.5 * spread) | (series > q3 + 1.5 * spread)


def _iqr_outliers(series: Any) -> int:
    return int(_iqr_mask(series).sum())


def _oldest_quartile_mean(frame: Any) -> float:
    import pandas as pd

    return frame.groupby(pd.qcut(frame["age"], 4), observed=True)["target"].mean().iloc[-1]


def _linear_r2(frame: Any) -> float:
    from sklearn.linear_model import LinearRegression

    x, y = frame[features(frame)], frame["target"]
    return LinearRegression().fit(x, y).score(x, y)


def _cv_r2(frame: Any) -> float:
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import cross_val_score

    return cross_val_score(LinearRegression(), frame[features(frame)], frame["target"], cv=5, scoring="r2").mean()


def _knn_accuracy(frame: Any) -> float:
    from sklearn.model_selection import train_test_split
    from sklearn.neighbors import KNeighborsClassifier

    x_train, x_test, y_train, y_test = train_test_split(frame[features(frame)], frame["target"], test_size=0.3,
                                                        random_state=0)
    return KNeighborsClassifier(n_neighbors=5).fit(x_train, y_train).score(x_test, y_test)


def _logistic_cv(frame: Any) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    return cross_val_score(model, frame[features(frame)], frame["target"], cv=5, scoring="accuracy").mean()


def _tree_accuracy(frame: Any) -> float:
    from sklearn.tree import DecisionTreeClassifier

    x, y = frame[features(frame)], frame["target"]
    return DecisionTreeClassifier(max_depth=2, random_state=0).fit(x, y).score(x, y)


def _strong_correlations(frame: Any, threshold: float = 0.5) -> int:
    return int((frame[features(frame)].corrwith(frame["target"]).abs() > threshold).sum())


def _per_species(frame: Any, column: str, how: str, places: int) -> str:
    values = getattr(frame.groupby("target")[column], how)()
    return ", ".join(r(values[k], places) for k in range(3))


_DATA = {"wine": "scikit-learn's wine data: 13 chemical measurements, `target` is the cultivar (0, 1 or 2)",
         "diabetes": "scikit-learn's diabetes data: 10 baseline features (scaled), `target` is disease progression "
                     "one year later",
         "breast_cancer": "scikit-learn's breast cancer data: 30 features of cell nuclei, `target` is 0 for malignant "
                          "and 1 for benign",
         "iris": "scikit-learn's iris data: 4 measurements in cm, `target` is the species (0 setosa, 1 versicolor, "
                 "2 virginica)",
         "comments": "a list of 12 short customer comments about wines, in several languages",
         "tasting_notes": "a list of 10 wine tasting notes, each one evoking a fruity, woody or spicy character"}

Q = Question
QUESTIONS: tuple[Question, ...] = (
    # aggregates
    Q("agg-1", ("wine",), "aggregate", "easy", "How many wines are in `wine`?", "a whole number",
      lambda d: str(len(d["wine"]))),
    Q("agg-2", ("wine",), "aggregate", "easy", "What is the mean alcohol content of the wines?",
      "a number rounded to 2 decimals", lambda d: r(d["wine"]["alcohol"].mean(), 2)),
    Q("agg-3", ("diabetes",), "aggregate", "easy", "What is the median of the disease progression `target`?",
      "a number rounded to 1 decimal", lambda d: r(d["diabetes"]["target"].median(), 1)),
    Q("agg-4", ("breast_cancer",), "aggregate", "easy", "How many of the tumours are malignant?", "a whole number",
      lambda d: str(int((d["breast_cancer"]["target"] == 0).sum()))),
    Q("agg-5", ("iris",), "aggregate", "easy", "What is the longest petal length in the data, in cm?",
      "a number with 1 decimal", lambda d: r(d["iris"]["petal length (cm)"].max(), 1)),
    Q("agg-6", ("wine",), "aggregate", "easy", "What is the sample standard deviation (ddof=1) of proline?",
      "a number rounded to 2 decimals", lambda d: r(d["wine"]["proline"].std(), 2)),
    Q("agg-7", ("breast_cancer",), "aggregate", "easy", "What is the average `mean radius` over all tumours?",
      "a number rounded to 3 decimals", lambda d: r(d["breast_cancer"]["mean radius"].mean(), 3)),
    Q("agg-8", ("breast_cancer",), "aggregate", "easy", "How many values are missing in the whole table?",
      "a whole number", lambda d: str(int(d["breast_cancer"].isna().sum().sum()))),
    Q("agg-9", ("iris",), "aggregate", "easy", "How many distinct values does `sepal length (cm)` take?",
      "a whole number", lambda d: str(d["iris"]["sepal length (cm)"].nunique())),
    Q("agg-10", ("iris",), "aggregate", "easy", "What fraction of the flowers have a petal length above 4.5 cm?",
      "a number between 0 and 1 rounded to 3 decimals", lambda d: r((d["iris"]["petal length (cm)"] > 4.5).mean(), 3)),
    # group-bys
    Q("group-1", ("iris",), "groupby", "easy", "Which species has the largest mean sepal width?",
      "the species name (setosa, versicolor or virginica)",
      lambda d: IRIS_SPECIES[int(d["iris"].groupby("target")["sepal width (cm)"].mean().idxmax())]),
    Q("group-2", ("wine",), "groupby", "easy", "What is the mean color_intensity of cultivar 2?",
      "a number rounded to 2 decimals",
      lambda d: r(d["wine"].loc[d["wine"]["target"] == 2, "color_intensity"].mean(), 2)),
    Q("group-3", ("wine",), "groupby", "easy", "Which cultivar has the highest mean proline?", "0, 1 or 2",
      lambda d: str(int(d["wine"].groupby("target")["proline"].mean().idxmax()))),
    Q("group-4", ("wine",), "groupby", "easy", "How many wines does each cultivar have?",
      "three whole numbers, comma-separated, for cultivars 0, 1 and 2 in that order",
      lambda d: ", ".join(str(int(d["wine"]["target"].eq(k).sum())) for k in range(3))),
    Q("group-5", ("breast_cancer",), "groupby", "hard",
      "How much larger is the mean `mean area` of malignant tumours than that of benign ones?",
      "the difference (malignant minus benign) rounded to 1 decimal",
      lambda d: r(d["breast_cancer"].groupby("target")["mean area"].mean().pipe(lambda m: m[0] - m[1]), 1)),
    Q("group-6", ("iris",), "groupby", "hard", "What is the median petal width of each species?",
      "three numbers with 1 decimal, comma-separated, for setosa, versicolor and virginica in that order",
      lambda d: _per_species(d["iris"], "petal width (cm)", "median", 1)),
    Q("group-7", ("diabetes",), "groupby", "hard",
      "`sex` takes two values. What is the mean target of the patients with the larger value of `sex`?",
      "a number rounded to 2 decimals",
      lambda d: r(d["diabetes"].loc[d["diabetes"]["sex"] == d["diabetes"]["sex"].max(), "target"].mean(), 2)),
    Q("group-8", ("diabetes",), "groupby", "hard",
      "Split the patients into four age quartiles with pandas.qcut(age, 4). What is the mean target in the oldest "
      "quartile?", "a number rounded to 2 decimals",
      lambda d: r(_oldest_quartile_mean(d["diabetes"]), 2)),
    Q("group-9", ("breast_cancer",), "groupby", "hard",
      "Which feature has the largest ratio of its malignant mean to its benign mean?", "the feature's column name",
      lambda d: (d["breast_cancer"].groupby("target")[features(d["breast_cancer"])].mean()
                 .pipe(lambda m: (m.loc[0] / m.loc[1]).idxmax()))),
    # correlations
    Q("corr-1", ("diabetes",), "correlation", "easy",
      "Which feature has the strongest (absolute) Pearson correlation with `target`?", "the column name",
      lambda d: d["diabetes"][features(d["diabetes"])].corrwith(d["diabetes"]["target"]).abs().idxmax()),
    Q("corr-2", ("diabetes",), "correlation", "easy", "What is the Pearson correlation between s1 and s2?",
      "a number rounded to 3 decimals", lambda d: r(d["diabetes"]["s1"].corr(d["diabetes"]["s2"]), 3)),
    Q("corr-3", ("iris",), "correlation", "easy",
      "What is the Spearman correlation between petal length and petal width?", "a number rounded to 3 decimals",
      lambda d: r(d["iris"]["petal length (cm)"].corr(d["iris"]["petal width (cm)"], method="spearman"), 3)),
    Q("corr-4", ("wine",), "correlation", "hard", "Which two different features are most correlated (absolute "
      "Pearson correlation, `target` left out)?", "the two column names, comma-separated",
      lambda d: _top_pair(d["wine"])),
    Q("corr-5", ("breast_cancer",), "correlation", "hard",
      "How many of the 30 features have an absolute Pearson correlation with `target` above 0.7?", "a whole number",
      lambda d: str(_strong_correlations(d["breast_cancer"], 0.7))),
    Q("corr-6", ("diabetes",), "correlation", "hard",
      "Which three features are most associated with `target` by absolute Pearson correlation?",
      "the three column names, comma-separated",
      lambda d: ", ".join(d["diabetes"][features(d["diabetes"])].corrwith(d["diabetes"]["target"]).abs()
                          .nlargest(3).index)),
    # outliers
    Q("out-1", ("wine",), "outlier", "easy",
      "How many wines have a proline z-score (using the sample standard deviation) above 2 in absolute value?",
      "a whole number", lambda d: str(int(((d["wine"]["proline"] - d["wine"]["proline"].mean())
                                           / d["wine"]["proline"].std()).abs().gt(2).sum()))),
    Q("out-2", ("breast_cancer",), "outlier", "hard",
      "By the 1.5 x IQR rule (quartiles from pandas' quantile), how many tumours are outliers in `mean area`?",
      "a whole number", lambda d: str(_iqr_outliers(d["breast_cancer"]["mean area"]))),
    Q("out-3", ("wine",), "outlier", "easy", "Which row (its 0-based index) has the highest magnesium?",
      "a whole number", lambda d: str(int(d["wine"]["magnesium"].idxmax()))),
    Q("out-4", ("iris",), "outlier", "easy",
      "How many flowers have a sepal width more than 2 sample standard deviations away from the mean?",
      "a whole number", lambda d: str(int(((d["iris"]["sepal width (cm)"] - d["iris"]["sepal width (cm)"].mean())
                                           .abs() > 2 * d["iris"]["sepal width (cm)"].std()).sum()))),
    Q("out-5", ("diabetes",), "outlier", "hard",
      "How many patients fall outside the 1.5 x IQR fences of `s1` or of `s2` (either one)?", "a whole number",
      lambda d: str(int((_iqr_mask(d["diabetes"]["s1"]) | _iqr_mask(d["diabetes"]["s2"])).sum()))),
    # fitted models
    Q("model-1", ("diabetes",), "model", "easy",
      "Fit scikit-learn's LinearRegression of `target` on all ten features. What is its R^2 on the same data?",
      "a number rounded to 4 decimals", lambda d: r(_linear_r2(d["diabetes"]), 4)),
    Q("model-2", ("diabetes",), "model", "hard",
      "What is the mean 5-fold cross-validated R^2 of LinearRegression on all ten features (cross_val_score, cv=5)?",
      "a number rounded to 3 decimals", lambda d: r(_cv_r2(d["diabetes"]), 3)),
    Q("model-3", ("iris",), "model", "hard",
      "Split with train_test_split(X, y, test_size=0.3, random_state=0) and fit KNeighborsClassifier(n_neighbors=5) "
      "on the four measurements. What is its accuracy on the test part?", "a number rounded to 3 decimals",
      lambda d: r(_knn_accuracy(d["iris"]), 3)),
    Q("model-4", ("breast_cancer",), "model", "hard",
      "What is the mean 5-fold cross-validated accuracy (cross_val_score, cv=5) of "
      "make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)) on all 30 features?",
      "a number rounded to 3 decimals", lambda d: r(_logistic_cv(d["breast_cancer"]), 3)),
    Q("model-5", ("wine",), "model", "hard",
      "Fit DecisionTreeClassifier(max_depth=2, random_state=0) on all 13 features. What is its accuracy on the "
      "training data?", "a number rounded to 3 decimals", lambda d: r(_tree_accuracy(d["wine"]), 3)),
    Q("model-6", ("diabetes",), "model", "easy",
      "Fit a straight line of `target` on `bmi` (least squares). What is its slope?", "a number rounded to 1 decimal",
      lambda d: r(np.polyfit(d["diabetes"]["bmi"], d["diabetes"]["target"], 1)[0], 1)),
    # files to write
    Q("file-1", ("iris",), "file", "easy",
      "Write the mean of each measurement per species to iris_means.csv (one row per species, with a header). "
      "Then answer: what is the mean petal length of virginica?", "a number rounded to 3 decimals",
      lambda d: r(d["iris"].loc[d["iris"]["target"] == 2, "petal length (cm)"].mean(), 3), ("iris_means.csv",)),
    Q("file-2", ("wine",), "file", "hard",
      "Write the wines of cultivar 0 whose alcohol is above 14 to strong_wines.csv (every column, with a header). "
      "How many wines are in the file?", "a whole number",
      lambda d: str(int(((d["wine"]["target"] == 0) & (d["wine"]["alcohol"] > 14)).sum())), ("strong_wines.csv",)),
    # text only a language model reads
    Q("query-1", ("comments",), "llm_query", "easy", "How many of the comments in `comments` are written in French?",
      "a whole number", lambda d: str(sum(language == "fr" for language, _ in d["_comments"]))),
    Q("query-2", ("tasting_notes",), "llm_query", "hard",
      "Each note in `tasting_notes` evokes a fruity, a woody or a spicy character, without naming it. How many "
      "evoke a fruity character?", "a whole number",
      lambda d: str(sum(kind == "fruity" for kind, _ in d["_tasting_notes"]))),
    # work for sub-agents
    Q("sub-1", ("iris", "wine", "diabetes", "breast_cancer"), "subagent", "hard",
      "For each of the four tables (iris.csv, wine.csv, diabetes.csv and breast_cancer.csv in the workspace), have "
      "a sub-agent count the features whose absolute Pearson correlation with `target` is above 0.5.",
      "four whole numbers, comma-separated, for iris, wine, diabetes and breast_cancer in that order",
      lambda d: ", ".join(str(_strong_correlations(d[name])) for name in ("iris", "wine", "diabetes", "breast_cancer"))),
    Q("sub-2", ("wine",), "subagent", "hard",
      "Save `wine` to the workspace, then have one sub-agent per cultivar find the feature with the largest "
      "absolute Cohen's d (pooled sample standard deviation) between that cultivar and the other two. Which "
      "feature is it for cultivar 0?", "the column name",
      lambda d: _cohens_d(d["wine"], 0).abs().idxmax()),
)


def _cohens_d(frame: Any, k: int) -> Any:
    inside, outside = frame[frame["target"] == k][features(frame)], frame[frame["target"] != k][features(frame)]
    pooled = np.sqrt(((len(inside) - 1) * inside.var() + (len(outside) - 1) * outside.var())
                     / (len(inside) + len(outside) - 2))
    return (inside.mean() - outside.mean()) / pooled


def describe(name: str) -> str:
    return _DATA[name]
