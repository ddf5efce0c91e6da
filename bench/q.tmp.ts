import pg from 'pg';
const c = new pg.Client('postgres://postgres:postgres@127.0.0.1:55432/postgres'); await c.connect();
const r = await c.query(process.argv[2]!); console.table(r.rows); await c.end();
