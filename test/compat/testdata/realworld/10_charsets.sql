-- Character sets (MySQL 8.4 / MariaDB 10.11 manuals, "Character Sets and Collations"): a legacy latin1
-- schema (latin1 is cp1252 in fact), a table per charset family with values from its repertoire, non-ASCII
-- keys, CHAR padding, ENUM and SET in latin1, and charset-changing ALTERs mid-stream.
-- allow: rw_cyrillic value.after.ukr Debezium decodes koi8u as KOI8-R (ї ґ become ╖ ╜); capture gives the server's CONVERT(ukr USING utf8mb4) (TestCharsetsAgainstServer)
-- allow: rw_japanese_korean value.after.ms Debezium cannot decode cp932 and emits U+FFFD; capture gives the server's CONVERT(ms USING utf8mb4)
-- allow: rw_japanese_korean value.after.ejms Debezium decodes eucjpms 0xA1C1 as WAVE DASH U+301C; the server converts it to FULLWIDTH TILDE U+FF5E, as capture does
CREATE TABLE rw_legacy (code CHAR(8) NOT NULL PRIMARY KEY, name VARCHAR(40), city CHAR(20), notes TEXT, kind ENUM('café','thé','bière') NOT NULL, tags SET('été','hiver','œuvre')) DEFAULT CHARSET=latin1;
INSERT INTO rw_legacy VALUES ('café', 'Françoise Müller', 'Zürich', 'naïve façade – €20 „quoted“', 'café', 'été,œuvre');
INSERT INTO rw_legacy VALUES ('Ærø', 'Søren Ø', 'Århus', 'ß ÿ Ÿ ž Š', 'bière', 'hiver');
INSERT INTO rw_legacy VALUES ('x', 'padded  ', ' lead', '', 'thé', '');
UPDATE rw_legacy SET name = 'Françoise Dupont', tags = 'été,hiver,œuvre' WHERE code = 'café';
UPDATE rw_legacy SET code = 'œuf' WHERE code = 'x';
DELETE FROM rw_legacy WHERE code = 'Ærø';
CREATE TABLE rw_central (k VARCHAR(20) CHARACTER SET latin2 NOT NULL PRIMARY KEY, cp VARCHAR(40) CHARACTER SET cp1250, l2 CHAR(10) CHARACTER SET latin2);
INSERT INTO rw_central VALUES ('Łódź', 'Příliš žluťoučký kůň', 'Ęą Śź'), ('Kraków', 'Győr ő ű', 'Čačak');
CREATE TABLE rw_cyrillic (k VARCHAR(20) CHARACTER SET cp1251 NOT NULL PRIMARY KEY, koi VARCHAR(40) CHARACTER SET koi8r, ukr VARCHAR(40) CHARACTER SET koi8u);
INSERT INTO rw_cyrillic VALUES ('Москва', 'Съешь же ещё этих', 'Україна ґ'), ('ёЁ', 'Привет', 'Київ');
CREATE TABLE rw_greek_hebrew_arabic (id INT PRIMARY KEY, el VARCHAR(40) CHARACTER SET greek, he VARCHAR(40) CHARACTER SET hebrew, ar VARCHAR(40) CHARACTER SET cp1256);
INSERT INTO rw_greek_hebrew_arabic VALUES (1, 'Αθήνα Ελλάδα', 'שלום עולם', 'مرحبا بالعالم');
CREATE TABLE rw_unicode (k VARCHAR(20) CHARACTER SET utf8mb3 NOT NULL PRIMARY KEY, u2 VARCHAR(20) CHARACTER SET ucs2, u16 VARCHAR(20) CHARACTER SET utf16, u16le VARCHAR(20) CHARACTER SET utf16le, u32 CHAR(10) CHARACTER SET utf32, mb4 VARCHAR(20) CHARACTER SET utf8mb4);
INSERT INTO rw_unicode VALUES ('€uro', 'é€中', 'Grüße 😀', '𝄞 clef', 'pad', '😀🎉');
CREATE TABLE rw_chinese (k VARCHAR(20) CHARACTER SET gbk NOT NULL PRIMARY KEY, gb VARCHAR(40) CHARACTER SET gb2312, b5 VARCHAR(40) CHARACTER SET big5);
INSERT INTO rw_chinese VALUES ('中文', '简体中文', '繁體中文'), ('北京', '你好', '臺灣');
CREATE TABLE rw_japanese_korean (k VARCHAR(20) CHARACTER SET sjis NOT NULL PRIMARY KEY, ms VARCHAR(40) CHARACTER SET cp932, eu VARCHAR(40) CHARACTER SET ujis, ejms VARCHAR(40) CHARACTER SET eucjpms, ko VARCHAR(40) CHARACTER SET euckr);
INSERT INTO rw_japanese_korean VALUES ('日本', '①～＼', 'カタカナ ｶﾀｶﾅ', '漢字', '한국어'), ('東京', 'ひらがな', '〜', '～', '서울');
CREATE TABLE rw_ascii (k VARCHAR(10) CHARACTER SET ascii NOT NULL PRIMARY KEY, v VARCHAR(20) CHARACTER SET ascii);
INSERT INTO rw_ascii VALUES ('a~z', 'plain {|}');
-- Mid-stream charset changes: rows before and after each ALTER decode with their own charset.
CREATE TABLE rw_convert (id INT PRIMARY KEY, v VARCHAR(30)) DEFAULT CHARSET=latin1;
INSERT INTO rw_convert VALUES (1, 'café');
ALTER TABLE rw_convert CONVERT TO CHARACTER SET utf8mb4;
INSERT INTO rw_convert VALUES (2, 'Grüße 😀');
UPDATE rw_convert SET v = 'crème' WHERE id = 1;
ALTER TABLE rw_legacy MODIFY name VARCHAR(40) CHARACTER SET utf8mb4;
INSERT INTO rw_legacy VALUES ('née', 'Zoë 😀', 'Köln', 'après', 'thé', 'hiver');
UPDATE rw_legacy SET name = 'Łukasz' WHERE code = 'café';
ALTER TABLE rw_central MODIFY cp VARCHAR(40) CHARACTER SET utf8mb4;
INSERT INTO rw_central VALUES ('Gdańsk', 'Świętokrzyskie 😀', 'Żółw');
