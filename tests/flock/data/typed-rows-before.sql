BEGIN TRANSACTION;
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, list_id TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL);
INSERT INTO "events" VALUES(1,'90dd9958','list.started','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "items": [{"item_id": "90dd9958-1", "text": "research one"}, {"item_id": "90dd9958-2", "text": "research two"}, {"item_id": "90dd9958-3", "text": "research three"}], "requester": "ada", "nest_id": "todo", "token_budget": 100000}');
INSERT INTO "events" VALUES(2,'90dd9958','crow.flying','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(3,'90dd9958','crow.flying','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(4,'90dd9958','crow.flying','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(5,'90dd9958','crow.landed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "crow": "Sentry", "ok": true, "tokens": 425}');
INSERT INTO "events" VALUES(6,'90dd9958','item.triaged','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "mode": "solo", "task_type": "research", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(7,'90dd9958','crow.landed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "crow": "Sentry", "ok": true, "tokens": 425}');
INSERT INTO "events" VALUES(8,'90dd9958','item.triaged','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "mode": "solo", "task_type": "research", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(9,'90dd9958','crow.landed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "crow": "Sentry", "ok": true, "tokens": 425}');
INSERT INTO "events" VALUES(10,'90dd9958','item.triaged','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "mode": "solo", "task_type": "research", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(11,'90dd9958','verdict','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "target": "triage", "verdict": "approved"}');
INSERT INTO "events" VALUES(12,'90dd9958','crow.flying','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "crow": "Hugin", "borrowed": false}');
INSERT INTO "events" VALUES(13,'90dd9958','verdict','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "target": "triage", "verdict": "approved"}');
INSERT INTO "events" VALUES(14,'90dd9958','crow.flying','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "crow": "Munin", "borrowed": false}');
INSERT INTO "events" VALUES(15,'90dd9958','crow.landed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "crow": "Hugin", "ok": true, "tokens": 168}');
INSERT INTO "events" VALUES(16,'90dd9958','item.answered','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "answer": "done: research one", "crows": ["Hugin"], "needs_approval": true}');
INSERT INTO "events" VALUES(17,'90dd9958','verdict','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "target": "triage", "verdict": "approved"}');
INSERT INTO "events" VALUES(18,'90dd9958','trust.changed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "holder": "flock", "task_type": "research", "from": 0, "to": 1}');
INSERT INTO "events" VALUES(19,'90dd9958','crow.flying','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "crow": "Pepper", "borrowed": false}');
INSERT INTO "events" VALUES(20,'90dd9958','crow.landed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "crow": "Munin", "ok": true, "tokens": 165}');
INSERT INTO "events" VALUES(21,'90dd9958','item.answered','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "answer": "done: research two", "crows": ["Munin"], "needs_approval": true}');
INSERT INTO "events" VALUES(22,'90dd9958','verdict','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-1", "target": "output", "verdict": "approved"}');
INSERT INTO "events" VALUES(23,'90dd9958','crow.landed','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "crow": "Pepper", "ok": true, "tokens": 162}');
INSERT INTO "events" VALUES(24,'90dd9958','item.answered','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "answer": "done: research three", "crows": ["Pepper"], "needs_approval": true}');
INSERT INTO "events" VALUES(25,'90dd9958','verdict','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-2", "target": "output", "verdict": "approved"}');
INSERT INTO "events" VALUES(26,'90dd9958','verdict','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "item_id": "90dd9958-3", "target": "output", "verdict": "approved"}');
INSERT INTO "events" VALUES(27,'90dd9958','list.finished','{"list_id": "90dd9958", "ts": "2027-01-15T08:00:00.000Z", "tokens_used": 1770, "token_budget": 100000}');
INSERT INTO "events" VALUES(28,'cfe8d7f7','list.started','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "items": [{"item_id": "cfe8d7f7-1", "text": "code alpha"}, {"item_id": "cfe8d7f7-2", "text": "code doomed beta"}, {"item_id": "cfe8d7f7-3", "text": "code gamma"}, {"item_id": "cfe8d7f7-4", "text": "code delta"}], "requester": "Pip", "nest_id": "todo", "token_budget": 100000}');
INSERT INTO "events" VALUES(29,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(30,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(31,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-3", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(32,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-4", "crow": "Sentry", "borrowed": false}');
INSERT INTO "events" VALUES(33,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "crow": "Sentry", "ok": true, "tokens": 423}');
INSERT INTO "events" VALUES(34,'cfe8d7f7','item.triaged','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(35,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "crow": "Sentry", "ok": true, "tokens": 425}');
INSERT INTO "events" VALUES(36,'cfe8d7f7','item.triaged','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(37,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-3", "crow": "Sentry", "ok": true, "tokens": 423}');
INSERT INTO "events" VALUES(38,'cfe8d7f7','item.triaged','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-3", "mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(39,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-4", "crow": "Sentry", "ok": true, "tokens": 423}');
INSERT INTO "events" VALUES(40,'cfe8d7f7','item.triaged','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-4", "mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}');
INSERT INTO "events" VALUES(41,'cfe8d7f7','verdict','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "target": "triage", "verdict": "approved"}');
INSERT INTO "events" VALUES(42,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "crow": "Inky", "borrowed": false}');
INSERT INTO "events" VALUES(43,'cfe8d7f7','verdict','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "target": "triage", "verdict": "approved"}');
INSERT INTO "events" VALUES(44,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "crow": "Tinker", "borrowed": false}');
INSERT INTO "events" VALUES(45,'cfe8d7f7','verdict','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-3", "target": "triage", "verdict": "rejected"}');
INSERT INTO "events" VALUES(46,'cfe8d7f7','item.skipped','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-3", "reason": "triage rejected"}');
INSERT INTO "events" VALUES(47,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "crow": "Tinker", "ok": false, "tokens": 0, "error": "anthropic 400: this crow lost its way"}');
INSERT INTO "events" VALUES(48,'cfe8d7f7','crow.flying','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "crow": "Ledger", "borrowed": false}');
INSERT INTO "events" VALUES(49,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "crow": "Inky", "ok": true, "tokens": 162}');
INSERT INTO "events" VALUES(50,'cfe8d7f7','item.answered','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "answer": "done: code alpha", "crows": ["Inky"], "needs_approval": true}');
INSERT INTO "events" VALUES(51,'cfe8d7f7','crow.landed','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "crow": "Ledger", "ok": false, "tokens": 0, "error": "anthropic 400: this crow lost its way"}');
INSERT INTO "events" VALUES(52,'cfe8d7f7','item.skipped','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-2", "reason": "failure"}');
INSERT INTO "events" VALUES(53,'cfe8d7f7','verdict','{"list_id": "cfe8d7f7", "ts": "2027-01-15T08:00:00.000Z", "item_id": "cfe8d7f7-1", "target": "output", "verdict": "approved"}');
CREATE TABLE items (
    item_id TEXT PRIMARY KEY, list_id TEXT NOT NULL, n INTEGER NOT NULL, text TEXT NOT NULL,
    state TEXT NOT NULL, triage TEXT, answer TEXT, crows TEXT);
INSERT INTO "items" VALUES('90dd9958-1','90dd9958',1,'research one','done','{"mode": "solo", "task_type": "research", "subtasks": [], "reason": "seen it", "needs_approval": true}','done: research one','["Hugin"]');
INSERT INTO "items" VALUES('90dd9958-2','90dd9958',2,'research two','done','{"mode": "solo", "task_type": "research", "subtasks": [], "reason": "seen it", "needs_approval": true}','done: research two','["Munin"]');
INSERT INTO "items" VALUES('90dd9958-3','90dd9958',3,'research three','done','{"mode": "solo", "task_type": "research", "subtasks": [], "reason": "seen it", "needs_approval": true}','done: research three','["Pepper"]');
INSERT INTO "items" VALUES('cfe8d7f7-1','cfe8d7f7',1,'code alpha','done','{"mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}','done: code alpha','["Inky"]');
INSERT INTO "items" VALUES('cfe8d7f7-2','cfe8d7f7',2,'code doomed beta','skipped','{"mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}',NULL,NULL);
INSERT INTO "items" VALUES('cfe8d7f7-3','cfe8d7f7',3,'code gamma','skipped','{"mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}',NULL,NULL);
INSERT INTO "items" VALUES('cfe8d7f7-4','cfe8d7f7',4,'code delta','awaiting_triage','{"mode": "solo", "task_type": "code", "subtasks": [], "reason": "seen it", "needs_approval": true}',NULL,NULL);
CREATE TABLE judgments (
    judgment TEXT NOT NULL, holder TEXT NOT NULL, moved_from INTEGER NOT NULL, moved_to INTEGER NOT NULL,
    PRIMARY KEY (judgment, holder));
INSERT INTO "judgments" VALUES('90dd9958-1/triage','flock',0,0);
INSERT INTO "judgments" VALUES('90dd9958-2/triage','flock',0,0);
INSERT INTO "judgments" VALUES('90dd9958-3/triage','flock',0,1);
INSERT INTO "judgments" VALUES('90dd9958-1/output','Hugin',0,0);
INSERT INTO "judgments" VALUES('90dd9958-2/output','Munin',0,0);
INSERT INTO "judgments" VALUES('90dd9958-3/output','Pepper',0,0);
INSERT INTO "judgments" VALUES('cfe8d7f7-1/triage','flock',0,0);
INSERT INTO "judgments" VALUES('cfe8d7f7-2/triage','flock',0,0);
INSERT INTO "judgments" VALUES('cfe8d7f7-3/triage','flock',0,0);
INSERT INTO "judgments" VALUES('cfe8d7f7-1/output','Inky',0,0);
CREATE TABLE lists (
    list_id TEXT PRIMARY KEY, requester TEXT NOT NULL, nest_id TEXT NOT NULL, token_budget INTEGER NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0, finished INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL);
INSERT INTO "lists" VALUES('90dd9958','ada','todo',100000,1770,1,1800000000.0);
INSERT INTO "lists" VALUES('cfe8d7f7','Pip','todo',100000,1856,0,1800000000.0);
CREATE TABLE nest_expectations (
    msg_id TEXT NOT NULL, crow TEXT NOT NULL, expects TEXT NOT NULL, nest_id TEXT NOT NULL,
    deadline REAL NOT NULL, nudged INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (msg_id, crow, expects));
CREATE TABLE nest_messages (
    nest_id TEXT NOT NULL, n INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (nest_id, n));
CREATE TABLE nest_quarantine (
    crow TEXT PRIMARY KEY, flag_msg_id TEXT NOT NULL);
CREATE TABLE nest_questions (
    flag_msg_id TEXT PRIMARY KEY, nest_id TEXT NOT NULL, crow TEXT NOT NULL, deadline REAL NOT NULL);
CREATE TABLE nest_requests (
    msg_id TEXT PRIMARY KEY, nest_id TEXT NOT NULL, mode TEXT NOT NULL);
CREATE TABLE nests (
    nest_id TEXT PRIMARY KEY, name TEXT NOT NULL, crows TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE TABLE pending (
    item_id TEXT NOT NULL, target TEXT NOT NULL, deadline REAL NOT NULL, PRIMARY KEY (item_id, target));
INSERT INTO "pending" VALUES('cfe8d7f7-4','triage',1800000600.0);
CREATE TABLE strikes (
    requester TEXT PRIMARY KEY, strikes INTEGER NOT NULL, cooldown_until REAL NOT NULL);
CREATE TABLE told (
    voice TEXT PRIMARY KEY, event_id INTEGER NOT NULL);
CREATE TABLE trust (
    holder TEXT NOT NULL, task_type TEXT NOT NULL, level INTEGER NOT NULL, streak INTEGER NOT NULL,
    PRIMARY KEY (holder, task_type));
INSERT INTO "trust" VALUES('flock','research',1,0);
INSERT INTO "trust" VALUES('Hugin','research',0,1);
INSERT INTO "trust" VALUES('Munin','research',0,1);
INSERT INTO "trust" VALUES('Pepper','research',0,1);
INSERT INTO "trust" VALUES('flock','code',0,0);
INSERT INTO "trust" VALUES('Inky','code',0,1);
CREATE INDEX events_by_list ON events (list_id, id);
CREATE INDEX events_by_item ON events (list_id, name, json_extract(data, '$.item_id'));
CREATE INDEX items_by_list ON items (list_id, n);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('events',53);
COMMIT;
