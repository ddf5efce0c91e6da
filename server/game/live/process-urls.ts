// The public URLs game processes may announce (game.process_urls): the operators keep the list
// (npm run ops -- process-url add|remove|list, a live admin session). Outside production a game
// process lists its own URL itself, as the database owner (the DATABASE_URL it runs with, the
// login the migrations run as): a development or test platform needs no operator for it.
import { oneClient } from '../../db/pools.ts';

export async function listOwnUrl(ownerUrl: string, url: string): Promise<void> {
  const owner = oneClient({ connectionString: ownerUrl, application_name: 'game-own-url' });
  await owner.connect();
  try {
    await owner.query('insert into game.process_urls (url) values ($1) on conflict (url) do nothing', [url]);
  } finally {
    await owner.end();
  }
}
