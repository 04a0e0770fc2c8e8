"""The decision layer: one typed package that imports nothing else of the project.

    spec        every decision model (DecisionSpec, RuleSpec, CodeRuleSpec, TierSpec, RebalanceSpec)
    rules       the one compiler: decide_frame(df, spec), decide(signals, spec) -> (reason, stage) per document
    tiers       bucket_of(frame, spec), tier_of(frame, spec): ensemble buckets and tiers, once
    code_rules  the per-language code rule files (stages/code/rules/*.yaml), typed
    dedup       dedup among the survivors of the filters (keepers), the dedup lookup join
    mixture     rebalancing primitives (plan_rebalance, rebalance_keep)
    rebalance   plan(df, spec), decide_plan(store, clusters, spec) -> DecidePlan (what every decide task needs)
    frame       documents_frame(docs), scan_store(folder, columns)
    step        Decide (datatrove filter)        priority  DedupPriority (signal step)
"""
