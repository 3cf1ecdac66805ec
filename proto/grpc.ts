// Maps protobuf-es service descriptors (generated into proto/gen by `npm run gen`)
// to grpc-js service definitions, so both sides use grpc-js with typed messages.
import * as grpc from '@grpc/grpc-js';
import { fromBinary, toBinary, type DescService, type DescMessage } from '@bufbuild/protobuf';

/** The encoded message as a Buffer over the same memory: toBinary's bytes are its own, and Buffer.from(bytes) would copy them again. */
function encode(schema: DescMessage, msg: unknown): Buffer {
  const bytes = toBinary(schema, msg as never);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function grpcDefinition(svc: DescService): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of svc.methods) {
    const input = m.input as DescMessage;
    const output = m.output as DescMessage;
    def[m.localName] = {
      path: `/${svc.typeName}/${m.name}`,
      requestStream: m.methodKind === 'client_streaming' || m.methodKind === 'bidi_streaming',
      responseStream: m.methodKind === 'server_streaming' || m.methodKind === 'bidi_streaming',
      requestSerialize: (msg: unknown) => encode(input, msg),
      requestDeserialize: (buf: Buffer) => fromBinary(input, buf),
      responseSerialize: (msg: unknown) => encode(output, msg),
      responseDeserialize: (buf: Buffer) => fromBinary(output, buf),
    };
  }
  return def;
}

/** A grpc-js client for a protobuf-es service; methods are named by their localName (camelCase). */
/** A method of a generic gRPC client (their shapes are known only at run time). */
type AnyMethod = (...args: any[]) => any;

export function grpcClient(svc: DescService, address: string, options: grpc.ClientOptions = {}): grpc.Client & Record<string, AnyMethod> {
  const Ctor = grpc.makeGenericClientConstructor(grpcDefinition(svc), svc.name);
  return new Ctor(address, grpc.credentials.createInsecure(), options) as grpc.Client & Record<string, AnyMethod>;
}

/** Calls a unary method and returns a promise. */
export function unary<Res>(
  client: grpc.Client & Record<string, AnyMethod>,
  method: string,
  req: unknown,
  metadata = new grpc.Metadata(),
  deadlineMs = 30_000,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    client[method]!(req, metadata, { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)));
  });
}
