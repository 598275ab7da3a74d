-- Names with both connectors' default adjustment modes: Debezium declares none for both, but with an
-- Avro converter it adjusts field names with avro anyway; capture's defaults are avro (fields) and none
-- (schema names). Non-ASCII letters in column names (which Java Avro would accept), reserved words, mixed
-- case, and table names with spaces, dots and non-ASCII letters, which the topic name sanitises.
CREATE TABLE `order items` (id INT NOT NULL PRIMARY KEY, `Café` VARCHAR(10), `naïve` INT, `日本語` VARCHAR(10), `select` INT, `order` INT, `key` INT, `MixedCase` INT, `Größe` INT);
INSERT INTO `order items` VALUES (1, 'noir', 1, 'はい', 2, 3, 4, 5, 6);
UPDATE `order items` SET `Café` = 'crème', `select` = 7 WHERE id = 1;
CREATE TABLE `Ærø` (`ключ` INT NOT NULL PRIMARY KEY, `值` VARCHAR(10));
INSERT INTO `Ærø` VALUES (1, '一');
DELETE FROM `Ærø` WHERE `ключ` = 1;
CREATE TABLE `my.table` (id INT NOT NULL PRIMARY KEY, `Wert` INT);
INSERT INTO `my.table` VALUES (1, 2);
