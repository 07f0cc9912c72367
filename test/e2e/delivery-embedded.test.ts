import { prepareEmbeddedStore } from '../helpers/stores.js';
import { guarantees } from './delivery-guarantees.js';

// The takeover cases run in delivery-embedded-takeover.test.ts, the PostgreSQL ones in delivery-postgres*.
guarantees({
  name: 'delivery guarantees, embedded store (one process)',
  twoInstances: false,
  prepare: prepareEmbeddedStore,
  part: 'delivery',
});
