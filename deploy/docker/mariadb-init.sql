-- Users of the compose stack, the same grants as deploy/local/stack.sh gives.
-- capture: REPLICATION SLAVE (read the binlog), BINLOG MONITOR (SHOW MASTER STATUS, GTID position),
-- SELECT (snapshots, information_schema), SHOW DATABASES. No RELOAD, no LOCK TABLES.
CREATE USER IF NOT EXISTS 'binlake_capture'@'%' IDENTIFIED BY 'binlake_capture';
GRANT SELECT, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'binlake_capture'@'%';
CREATE DATABASE IF NOT EXISTS shop;
-- An admin user for workloads (the image's MARIADB_USER would get no grant without a MARIADB_DATABASE).
CREATE USER IF NOT EXISTS 'binlake_admin'@'%' IDENTIFIED BY 'binlake_admin';
GRANT ALL PRIVILEGES ON *.* TO 'binlake_admin'@'%';
