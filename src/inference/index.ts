export * from './request.js';
export * from './response.js';
export * from './trace.js';
