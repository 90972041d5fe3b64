import type { ParameterizedContext } from 'koa';
import type { HubConfig } from '../config.js';

/**
 * The hub's own origin as browsers and clients reach it: SVC_HUB_PUBLIC_URL when set (behind a
 * proxy), else the request's protocol and Host. (Koa's ctx.origin is the Origin request header.)
 */
export const hubOrigin = (ctx: ParameterizedContext, config: HubConfig): string => config.publicUrl ?? `${ctx.protocol}://${ctx.host}`;
