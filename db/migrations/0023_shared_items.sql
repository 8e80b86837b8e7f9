-- 0023_shared_items: the items that two or more people labelled (two or more labels in force),
-- kept by triggers in the writer's transaction, so that the report finds them among a few
-- thousand rows instead of counting every label in force per item. Whether an item counts
-- (current, not hidden by an unfinished import) is left to the readers, as it changes apart
-- from the labels. Applied once, never edited.

CREATE TABLE shared_items (
    item_id INTEGER PRIMARY KEY
);

INSERT INTO shared_items (item_id)
SELECT item_id FROM labels_in_force GROUP BY item_id HAVING count(*) >= 2;

-- labels in force are replaced (deleted, then inserted), never updated
CREATE TRIGGER shared_items_label_added AFTER INSERT ON labels_in_force
WHEN (SELECT count(*) FROM labels_in_force WHERE item_id = new.item_id) >= 2
BEGIN
    INSERT OR IGNORE INTO shared_items (item_id) VALUES (new.item_id);
END;

CREATE TRIGGER shared_items_label_removed AFTER DELETE ON labels_in_force
WHEN (SELECT count(*) FROM labels_in_force WHERE item_id = old.item_id) < 2
BEGIN
    DELETE FROM shared_items WHERE item_id = old.item_id;
END;
