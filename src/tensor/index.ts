export * from './datatype.js';
export * from './tensor.js';
export * from './bytes.js';
export * from './view.js';
export * from './batch.js';
