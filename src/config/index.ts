/** The model configuration module: Triton's model_config.proto as TypeScript, its text and JSON forms. */
export type * from './types.js';
export { parseModelConfig, parseMessage, printModelConfig, printMessage } from './textformat.js';
export { newMessage, blank } from './message.js';
export type { ProtoObject } from './message.js';
export { MESSAGES, ENUMS, findField, messageDescriptor, enumDescriptor } from './schema.js';
export type { FieldDescriptor, MessageDescriptor, EnumDescriptor, FieldType, FieldLabel, ScalarKind } from './schema.js';
