import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { onPostgres } from '../helpers/stores.js';
import { guarantees } from './delivery-guarantees.js';

const runPostgres = await shouldRunPostgresTests();

// The other delivery cases run in delivery-postgres.test.ts, the embedded store's in delivery-embedded*.
onPostgres(runPostgres, (_, prepare) =>
  guarantees({
    name: 'delivery guarantees, two replicas on one PostgreSQL',
    twoInstances: true,
    prepare,
    part: 'takeover',
  }),
);
