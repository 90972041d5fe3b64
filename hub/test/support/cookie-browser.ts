// A browser for sign-in flows, as far as they need one: follows redirects by hand and keeps the
// cookies each answer sets (one jar per host; ports share cookies, as in a real browser).

export interface Page {
  status: number;
  url: string;
  headers: Headers;
  text: string;
}

export class CookieBrowser {
  readonly jar = new Map<string, Map<string, string>>();

  cookie(host: string, name: string): string | undefined {
    return this.jar.get(host)?.get(name);
  }

  private cookieHeader(url: URL): string {
    return [...(this.jar.get(url.hostname) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(url: URL, headers: Headers): void {
    let jar = this.jar.get(url.hostname);
    if (!jar) this.jar.set(url.hostname, (jar = new Map()));
    for (const line of headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const gone = attrs.some(
        (a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()),
      );
      if (gone || value === '') jar.delete(name);
      else jar.set(name, value);
    }
  }

  /** One request, no redirect followed. */
  async request(method: string, href: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<Page> {
    const url = new URL(href);
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: { cookie: this.cookieHeader(url), ...init.headers },
      body: init.body,
    });
    this.keep(url, res.headers);
    return { status: res.status, url: url.href, headers: res.headers, text: await res.text() };
  }

  /** GETs `href` and follows redirects; stops before a redirect whose target `stopAt` accepts, returning that target. */
  async follow(href: string, stopAt?: (url: URL) => boolean): Promise<Page & { stoppedAt?: string }> {
    let url = href;
    for (let hops = 0; hops < 20; hops++) {
      const page = await this.request('GET', url);
      const location = page.headers.get('location');
      if (page.status < 300 || page.status >= 400 || !location) return page;
      const next = new URL(location, url);
      if (stopAt?.(next)) return { ...page, stoppedAt: next.href };
      url = next.href;
    }
    throw new Error(`more than 20 redirects from ${href}`);
  }
}
