"""The TREC Fair 2022 task-1 reference values of tests/fairltr/metrics/test_awrf.py.

Runs the track's own evaluation code (fair-trec/trec2022-fair-public, commit 6fd105f:
wptrec.metrics.AWRFMetric with wptrec.dimension.FairDim) on the test's small synthetic example and
prints the inputs and the per-topic nDCG, AWRF and Score as JSON. It needs xarray, so it runs in a
throwaway venv, never fairltr's:

    python -m venv /tmp/trecvenv && /tmp/trecvenv/bin/pip install xarray pandas scipy numpy
    git clone https://github.com/fair-trec/trec2022-fair-public /tmp/trec2022 && git -C /tmp/trec2022 checkout 6fd105f
    /tmp/trecvenv/bin/python benchmarks/trec_fair_reference_driver.py /tmp/trec2022
"""
import json
import sys

import numpy as np
import pandas as pd
import xarray as xr

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/tmp/trec2022")
from wptrec.dimension import FairDim
from wptrec.metrics import AWRFMetric

def rows(rng, n, levels):
    a = rng.dirichlet(np.ones(levels) * 0.7, n)
    a = np.round(a, 2); a[:, -1] = np.round(1 - a[:, :-1].sum(1), 2)
    # some pages fully unknown, some fully known
    return a

rng = np.random.default_rng(2022)
pages = list(range(1, 13))
geo_levels = ['Africa', 'Asia', 'Europe', '@UNKNOWN']
gen_levels = ['female', 'male', '@UNKNOWN']
geo = rows(rng, 12, 4); gen = rows(rng, 12, 3)
geo[0] = [0, 0, 0, 1]; geo[1] = [0, 1, 0, 0]; gen[2] = [0, 0, 1]; gen[3] = [1, 0, 0]
assert np.allclose(geo.sum(1), 1) and np.allclose(gen.sum(1), 1) and (geo >= 0).all() and (gen >= 0).all()
def dim(name, levels, a):
    df = pd.DataFrame(a, index=pd.Index(pages, name='page_id'), columns=levels); df.name = name
    return FairDim(df, xr.DataArray(df, dims=['page', name]), None, True)
dims2 = [dim('geo', geo_levels, geo), dim('gender', gen_levels, gen)]
dims1 = [dim('geo', geo_levels, geo)]
runs = {1: [3, 1, 7, 99, 12, 5], 2: [8, 2, 6, 10, 98, 4, 11, 9], 3: [5, 4]}
qrels = pd.DataFrame({'topic_id': [1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3],
                      'page_id': [3, 7, 2, 6, 4, 11, 1, 12, 4, 9, 10]}).set_index('topic_id')
tg2 = np.round(rng.dirichlet(np.ones(12), 3), 3); tg2[:, -1] = np.round(1 - tg2[:, :-1].sum(1), 3)
tg2 = np.clip(tg2, 0, None)
tg1 = np.round(rng.dirichlet(np.ones(4), 3), 3); tg1[:, -1] = np.round(1 - tg1[:, :-1].sum(1), 3)
tgt2 = xr.DataArray(tg2.reshape(3, 4, 3), dims=['topic_id', 'geo', 'gender'],
                    coords={'topic_id': [1, 2, 3], 'geo': geo_levels, 'gender': gen_levels})
tgt1 = xr.DataArray(tg1, dims=['topic_id', 'geo'], coords={'topic_id': [1, 2, 3], 'geo': geo_levels})
out = {'pages': pages, 'geo': geo.tolist(), 'gender': gen.tolist(), 'runs': {str(k): v for k, v in runs.items()},
       'qrels': {str(q): qrels.loc[q, 'page_id'].tolist() for q in [1, 2, 3]},
       'target_geo_gender': tg2.tolist(), 'target_geo': tg1.tolist()}
for name, dims, tgt in [('geo_gender', dims2, tgt2), ('geo', dims1, tgt1)]:
    metric = AWRFMetric(qrels, dims, tgt)
    res = {}
    for q, run in runs.items():
        s = metric(pd.Series(run, name=q), name=q)
        res[str(q)] = {k: float(v) for k, v in s.items()}
    out['reference_' + name] = res
print(json.dumps(out))
