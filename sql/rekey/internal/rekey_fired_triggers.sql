-- The user triggers a batch's rewrite of the columns (rekey_columns of the key's table) fires, on
-- every table it touches (partitions too), as PostgreSQL decides in TriggerEnabled (trigger.c):
-- enabled (in any replication role: one enabled only for replicas counts too), for the event, and
-- for an UPDATE OF trigger only when one of its columns changes (matched by name: a partition's
-- columns may be numbered otherwise), a generated column counting as changed when what it is made
-- from may be (conservatively: any generated column). Where rows can move between partitions, a
-- move also fires the DELETE and INSERT triggers of the partitions. before: a BEFORE or INSTEAD
-- OF row trigger, which can change or skip the row the rewrite stores; an AFTER one runs after it
-- is stored. A WHEN condition is not evaluated: such a trigger counts as firing.
CREATE FUNCTION objectid_internal.rekey_fired_triggers(columns objectid_internal.rekey_column[])
    RETURNS TABLE (relid regclass, root regclass, trigger_name name, trigger_oid oid, before boolean)
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $body$
SELECT DISTINCT x.relid, x.root, t.tgname, t.oid, (t.tgtype & 1) <> 0 AND (t.tgtype & (2 | 64)) <> 0
  FROM objectid_internal.rekey_tables(columns) x
  JOIN pg_trigger t ON t.tgrelid = x.relid
 WHERE NOT t.tgisinternal AND t.tgenabled <> 'D'
   AND (((t.tgtype & 16) <> 0
         AND (cardinality(t.tgattr::int2[]) = 0
              OR EXISTS (SELECT FROM unnest(columns) c2
                           JOIN pg_attribute ta ON ta.attrelid = x.relid AND ta.attname = c2.attname
                          WHERE c2.relid = x.root AND ta.attnum = ANY (t.tgattr::int2[]))
              OR EXISTS (SELECT FROM pg_attribute ga
                          WHERE ga.attrelid = x.relid AND ga.attnum = ANY (t.tgattr::int2[])
                            AND ga.attgenerated <> '')))
        OR ((t.tgtype & 12) <> 0 AND x.relid <> x.root
            AND EXISTS (SELECT FROM pg_partitioned_table pt WHERE pt.partrelid IN
                          (SELECT p.relid FROM pg_partition_tree(x.root) p))))
 ORDER BY 1, 3
$body$;
