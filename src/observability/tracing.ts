import {
  type Attributes,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

export type SpanRole = 'server' | 'client' | 'internal';

/**
 * Traces (OpenTelemetry, exported over OTLP/HTTP): a span per Slack request, per job, and per agent or Slack
 * call. Spans carry ids (team, channel, thread, agent session, job), never message text or secrets; a failure
 * is marked with its error type only. Without OTEL_EXPORTER_OTLP_ENDPOINT no SDK is loaded and every call is
 * a plain pass-through.
 */
export interface Tracing {
  /** Runs `work` in a span, a child of the span running now (if any). */
  inSpan<T>(name: string, role: SpanRole, attributes: Attributes, work: () => Promise<T>): Promise<T>;
  /** Runs `work` in a span whose parent was recorded earlier as a W3C `traceparent` (a job, from its event). */
  inSpanFrom<T>(
    parent: string | undefined,
    name: string,
    attributes: Attributes,
    work: () => Promise<T>,
  ): Promise<T>;
  /** Adds ids learnt along the way (an agent session) to the span running now. */
  annotate(attributes: Attributes): void;
  /** The span running now as a W3C `traceparent` value, to record with work or send along; undefined when off. */
  traceparent(): string | undefined;
  /** Headers that carry the span running now to another service. */
  headers(): Record<string, string>;
  /** Sends the spans not sent yet. */
  shutdown(): Promise<void>;
}

const OFF: Tracing = {
  inSpan: (_name, _role, _attributes, work) => work(),
  inSpanFrom: (_parent, _name, _attributes, work) => work(),
  annotate: () => {},
  traceparent: () => undefined,
  headers: () => ({}),
  shutdown: async () => {},
};

const KINDS: Record<SpanRole, SpanKind> = {
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  internal: SpanKind.INTERNAL,
};

export async function startTracing(config: { endpoint?: string; serviceName: string }): Promise<Tracing> {
  if (!config.endpoint) return OFF;
  // Loaded only when tracing is on: a bot without an endpoint pays nothing for it.
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    spanProcessors: [
      new BatchSpanProcessor(
        new OTLPTraceExporter({
          url: `${config.endpoint.replace(/\/+$/, '')}/v1/traces`,
          // A collector that does not answer holds up shutdown (the last spans are flushed) this long at most.
          timeoutMillis: EXPORT_TIMEOUT_MS,
        }),
      ),
    ],
  });
  // Installs the context manager that carries the running span across awaits (once per process).
  provider.register();
  return tracingWith(provider.getTracer('slack-agent-bridge'), () => provider.shutdown());
}

const EXPORT_TIMEOUT_MS = 5_000;

function tracingWith(tracer: Tracer, shutdown: () => Promise<void>): Tracing {
  const propagator = new W3CTraceContextPropagator();
  const run = <T>(name: string, role: SpanRole, attributes: Attributes, work: () => Promise<T>) =>
    tracer.startActiveSpan(name, { kind: KINDS[role], attributes }, async (span) => {
      try {
        return await work();
      } catch (error) {
        // The type only: error messages may quote what people or services wrote.
        span.setStatus({ code: SpanStatusCode.ERROR });
        span.setAttribute('error.type', error instanceof Error ? error.name : typeof error);
        throw error;
      } finally {
        span.end();
      }
    });
  return {
    inSpan: run,
    inSpanFrom: (parent, name, attributes, work) => {
      const parentContext = parent
        ? propagator.extract(ROOT_CONTEXT, { traceparent: parent }, defaultTextMapGetter)
        : ROOT_CONTEXT;
      return context.with(parentContext, () => run(name, 'internal', attributes, work));
    },
    annotate: (attributes) => trace.getActiveSpan()?.setAttributes(attributes),
    traceparent: () => {
      const carrier: Record<string, string> = {};
      propagator.inject(context.active(), carrier, defaultTextMapSetter);
      return carrier.traceparent;
    },
    headers: () => {
      const carrier: Record<string, string> = {};
      propagator.inject(context.active(), carrier, defaultTextMapSetter);
      return carrier;
    },
    shutdown,
  };
}
