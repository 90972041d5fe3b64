import Router from '@koa/router';
import type { PageForm, Viewer } from './page-kit.js';

// The router every page module registers on: its handlers see the viewer (and a posted form).

export interface PageState {
  viewer: Viewer;
  form?: PageForm;
}

export type PageRouter = Router<PageState>;

export const newPageRouter = (): PageRouter => new Router<PageState>();
