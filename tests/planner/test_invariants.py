

def test_the_search_margin_is_the_next_cheapest_plan_priced_over_the_chosen():
    """Its earlier best plans (the trace) and baselines; none costlier: no margin."""
    from cepplan.planner.invariant_ranges import search_margin

    sharing = {"modelled_cost": {"chosen": 10.0, "trivial": 20.0, "sh": 10.0, "re": 15.0},
               "trace": [[0.0, 20.0], [0.1, 12.5], [0.2, 10.0]]}
    assert search_margin(sharing) == 0.25
    assert search_margin({"modelled_cost": {"chosen": 10.0, "trivial": 10.0}}) is None
    assert search_margin(None) is None and search_margin({"note": "no search"}) is None
