import { prepareEmbeddedStore } from '../helpers/stores.js';
import { guarantees } from './delivery-guarantees.js';

// The PostgreSQL half runs in delivery-postgres.test.ts, beside this one.
guarantees({
  name: 'delivery guarantees, embedded store (one process)',
  twoInstances: false,
  prepare: prepareEmbeddedStore,
});
