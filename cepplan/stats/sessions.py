"""A synthetic per-user clickstream with sessions: the keyed workload real users bring most
(docs/planner.md, "Keyed workloads"). Each user has sessions at uniform times over the span; a
session views products (gaps exponential, mean 40 s), adds some viewed product to the cart
(probability 6 % per view, 30 s later on average) and buys some carted product (55 %, 2 min
later on average). A purchase is rare per user and common over all users, and a user's
events cluster in time: the case a model with whole-stream rates gets wrong.

    events = clickstream(users=4500, days=7, seed=1)   # canonical columns + user, product
    workload = clickstream_workload()                  # SEQ(PageView, AddToCart, Purchase)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cepplan.workload.columns import EVENT_ID, EVENT_TS, EVENT_TYPE

VIEW_GAP, CART_DELAY, BUY_DELAY = 40.0, 30.0, 120.0  # seconds, means of exponentials
CART_SHARE, BUY_SHARE = 0.06, 0.55
VIEWS_PER_SESSION, SESSIONS_PER_USER = 9.0, 2.1
PRODUCTS = 2000


def clickstream(users: int = 4500, days: float = 7.0, seed: int = 1) -> pd.DataFrame:
    """Events of `users` users over `days` days (times in seconds from 0), sorted by time, ids
    0…n−1 in that order; columns `__type`, `__ts`, `__id`, `user` (u0…), `product`."""
    rng = np.random.default_rng(seed)
    span = days * 86400.0
    activity = rng.lognormal(0.0, 0.8, users)
    sessions = 1 + rng.poisson(activity * (SESSIONS_PER_USER - 1) / activity.mean())
    kinds: list[np.ndarray] = []
    times: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    products: list[np.ndarray] = []
    for user, count in enumerate(sessions):
        for start in rng.uniform(0.0, span, count):
            views = 1 + rng.geometric(1.0 / VIEWS_PER_SESSION)
            pool = rng.integers(0, PRODUCTS, 3 * views)
            seen = pool[rng.integers(0, len(pool), views)]
            at = start + np.cumsum(rng.exponential(VIEW_GAP, views))
            carted = rng.random(views) < CART_SHARE
            cart_at = at[carted] + rng.exponential(CART_DELAY, int(carted.sum()))
            bought = rng.random(len(cart_at)) < BUY_SHARE
            buy_at = cart_at[bought] + rng.exponential(BUY_DELAY, int(bought.sum()))
            kinds += [np.zeros(views, np.int8), np.ones(len(cart_at), np.int8),
                      np.full(len(buy_at), 2, np.int8)]
            times += [at, cart_at, buy_at]
            products += [seen, seen[carted], seen[carted][bought]]
            owners.append(np.full(views + len(cart_at) + len(buy_at), user))
    ts = np.concatenate(times)
    order = np.argsort(ts, kind="stable")
    names = np.array(["PageView", "AddToCart", "Purchase"], dtype=object)
    user_names = np.array([f"u{u}" for u in range(users)], dtype=object)
    return pd.DataFrame({EVENT_TYPE: names[np.concatenate(kinds)[order]],
                         EVENT_TS: ts[order],
                         EVENT_ID: np.arange(len(ts), dtype=np.int64),
                         "user": user_names[np.concatenate(owners)[order]],
                         "product": np.concatenate(products)[order].astype(np.int64)})


def clickstream_workload(name: str = "clickstream") -> dict[str, Any]:
    """The workload document: per user, a page view, an add to cart and a purchase of the same
    product within 30 minutes; CSV with ISO timestamps (`synth_write.write_events` writes it,
    after `apply_time_format`)."""
    attributes = {"user": "string", "product": "long"}
    return {
        "format": "cepplan.workload/1", "name": name, "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "event",
                   "time_column": "ts", "time_format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
                   "key_columns": ["user"]},
        "event_types": {t: {"attributes": dict(attributes)}
                        for t in ("PageView", "AddToCart", "Purchase")},
        "patterns": [{"name": "view_cart_buy",
                      "structure": ["SEQ", "v:PageView", "c:AddToCart", "p:Purchase"],
                      "where": ["v.product == c.product", "c.product == p.product"],
                      "partition_by": ["user"], "within": "30min"}]}

