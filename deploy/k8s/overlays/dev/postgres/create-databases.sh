#!/bin/sh
# Runs once, when the PostgreSQL data volume is first initialised: one role
# and one database per service, each role able to reach only its own
# database. The services create their tables themselves (migrations run at
# start-up).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v game_password="$GAME_PASSWORD" \
    -v rating_password="$RATING_PASSWORD" \
    -v matchmaking_password="$MATCHMAKING_PASSWORD" <<'SQL'
CREATE ROLE game LOGIN PASSWORD :'game_password';
CREATE ROLE rating LOGIN PASSWORD :'rating_password';
CREATE ROLE matchmaking LOGIN PASSWORD :'matchmaking_password';
CREATE DATABASE game OWNER game;
CREATE DATABASE rating OWNER rating;
CREATE DATABASE matchmaking OWNER matchmaking;
REVOKE ALL ON DATABASE game, rating, matchmaking FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE game TO game;
GRANT CONNECT, TEMPORARY ON DATABASE rating TO rating;
GRANT CONNECT, TEMPORARY ON DATABASE matchmaking TO matchmaking;
SQL
