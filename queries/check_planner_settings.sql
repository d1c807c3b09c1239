-- The settings that change plans, for pgplan check's baseline: the planner's enable_* switches,
-- its cost constants, its memory and its join search limits.
-- Returns one row per setting: name (text), setting (text, with its unit when it has one).
-- Minimum server version: 9.4.
SELECT name, setting || coalesce(unit, '') AS setting
FROM pg_settings
WHERE name LIKE 'enable\_%'
   OR name IN (
       'seq_page_cost', 'random_page_cost', 'cpu_tuple_cost', 'cpu_index_tuple_cost',
       'cpu_operator_cost', 'parallel_setup_cost', 'parallel_tuple_cost',
       'effective_cache_size', 'work_mem', 'hash_mem_multiplier', 'default_statistics_target',
       'from_collapse_limit', 'join_collapse_limit', 'geqo', 'geqo_threshold',
       'max_parallel_workers_per_gather', 'min_parallel_table_scan_size',
       'min_parallel_index_scan_size', 'plan_cache_mode', 'jit', 'constraint_exclusion',
       'cursor_tuple_fraction', 'effective_io_concurrency'
   )
ORDER BY name
