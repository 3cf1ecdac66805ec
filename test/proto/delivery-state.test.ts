import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { type DeliverySnapshot, noProject, noProvider, noSeries } from '../../common/delivery-state.js';
import { deliveryStateFromProto, deliveryStateToProto } from '../../proto/delivery-state.js';
import { DeliveryStateResponseSchema } from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';

describe('the delivery state on the wire', () => {
  const now = Date.UTC(2030, 0, 1, 12, 30, 15);

  it('carries the series and the oldest accepted times there and back', () => {
    const series = noSeries(now);
    series.minute.delivered[59] = 4;
    series.minute.bounced[3] = 2;
    series.hour.complained[23] = 1;
    const s: DeliverySnapshot = {
      node: 'n1',
      atMs: now,
      providers: [{ ...noProvider('google'), oldestAcceptedMs: now - 5_000, projects: [{ ...noProject('p1'), oldestAcceptedMs: now - 5_000 }] }],
      series,
      projectsHour: [{ projectId: 'p1', lastHour: { delivered: 5, deferred: 1, bounced: 2, complained: 0 } }],
    };
    expect(deliveryStateFromProto(deliveryStateToProto(s))).toEqual(s);
  });

  it("reads a gateway that sends no series (older than them) as zeros ending at its answer's time", () => {
    const r = create(DeliveryStateResponseSchema, { node: 'old', atMs: BigInt(now), providers: [{ provider: 'google' }] });
    const s = deliveryStateFromProto(r);
    expect(s.series).toEqual(noSeries(now));
    expect(s.providers[0]?.oldestAcceptedMs).toBe(0);
    expect(s.projectsHour).toBeUndefined();
  });
});
