import { status as Status, type ServerInterceptor, type StatusObject } from '@grpc/grpc-js';
import { limitExceeded, type NereidError } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';

/**
 * A limit on what a compressed request message inflates to (--grpc-max-decompressed-size).
 *
 * grpc-js (1.14) inflates a message marked compressed with a streaming zlib, in zlib's thread pool, one 16 KiB
 * chunk at a time, and stops as soon as the output passes the call's receive limit, answering
 * RESOURCE_EXHAUSTED. That limit is grpc.max_receive_message_length, which Nereid keeps at Triton's 2 GiB for
 * messages that arrive whole (the client sent those bytes). With it, a 1 MB message that inflates to 1 GiB was
 * inflated in full, joined into one buffer (a second GiB) on the event loop, and decoded. A call whose client
 * compresses its messages gets a lower limit here, so inflating stops there.
 *
 * grpc-js has no option for this separate limit: the interceptor sets the call's own receive limit, a field
 * grpc-js reads when it inflates and not when it reads the message's frame (whose limit it fixes when the call
 * starts). The interceptor touches only calls with a grpc-encoding other than identity; the others pay one
 * function call. It relies on grpc-js's internals: when they change, a warning says so once, and the tests of
 * this limit fail.
 */

/** The fields of grpc-js's BaseServerInterceptingCall used here (not part of its public types). */
interface BaseCallInternals {
  incomingEncoding?: unknown;
  maxReceiveMessageSize?: unknown;
  sendStatus(status: Partial<StatusObject>): void;
}

/** What grpc-js answers when inflating passes the limit; the answer is replaced by Nereid's own words. */
const GRPC_JS_DETAILS = 'Received message that decompresses to a size larger than';

export function decompressionLimit(maxBytes: number, report: (e: NereidError) => void, logger: Logger): ServerInterceptor {
  let warned = false;
  return ((_method: unknown, call: BaseCallInternals) => {
    const encoding = call.incomingEncoding;
    if (encoding === 'identity') return call;
    if (typeof encoding !== 'string' || typeof call.maxReceiveMessageSize !== 'number' || typeof call.sendStatus !== 'function') {
      if (!warned) {
        warned = true;
        logger.warn('--grpc-max-decompressed-size is not enforced: this version of @grpc/grpc-js keeps its receive limit elsewhere');
      }
      return call;
    }
    if (call.maxReceiveMessageSize !== -1 && call.maxReceiveMessageSize <= maxBytes) return call;
    call.maxReceiveMessageSize = maxBytes;
    const sendStatus = call.sendStatus;
    call.sendStatus = (s) => {
      if (s.code === Status.RESOURCE_EXHAUSTED && s.details?.startsWith(GRPC_JS_DETAILS)) {
        const e = limitExceeded('RESOURCE_EXHAUSTED', 'grpc-max-decompressed-size',
          `request message decompresses to more than the maximum of ${maxBytes} bytes (--grpc-max-decompressed-size)`);
        report(e);
        s = { ...s, details: e.message };
      }
      sendStatus.call(call, s);
    };
    return call;
  }) as unknown as ServerInterceptor;
}
