/** The model configuration module: Triton's model_config.proto as TypeScript, its text and JSON forms. */
export type * from './types.js';
export { parseModelConfig, parseMessage, printModelConfig, printMessage } from './textformat.js';
export { newMessage, blank } from './message.js';
export type { ProtoObject } from './message.js';
export { MESSAGES, ENUMS, findField, messageDescriptor, enumDescriptor } from './schema.js';
export type { FieldDescriptor, MessageDescriptor, EnumDescriptor, FieldType, FieldLabel, ScalarKind } from './schema.js';
export { modelConfigToJson, modelConfigFromJson } from './json.js';
export { autoCompleteBackendFields, normalizeModelConfig, PLATFORM_BACKEND, SEQUENCE_IDLE_DEFAULT_MICROSECONDS } from './normalize.js';
export type { DirEntry, NormalizeOptions } from './normalize.js';
export {
  validateDecoupledCache, validateDirectoryName, validateInstanceGroups, validateModelConfig, validateModelIO, validateModelSettings,
} from './validate.js';
export type { ValidateOptions } from './validate.js';
