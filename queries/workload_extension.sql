-- Whether pg_stat_statements can be read here: created in this database, and loaded through
-- shared_preload_libraries (without the library the view raises an error).
-- Returns: created (bool), preloaded (bool).
-- Minimum server version: 9.4.
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements') AS created,
       coalesce('pg_stat_statements' = ANY (string_to_array(
           replace(current_setting('shared_preload_libraries'), ' ', ''), ',')), false) AS preloaded
