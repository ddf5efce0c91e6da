import { startEmbeddedPostgres } from '../server/db/embedded.ts';
const pg = await startEmbeddedPostgres({ dataDir: '/tmp/pgstat-data', port: 55432, ephemeral: false, settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', fsync: 'off' } });
console.log(pg.url);
process.on('SIGTERM', async () => { await pg.stop(); process.exit(0); });
setInterval(() => {}, 1e9);
