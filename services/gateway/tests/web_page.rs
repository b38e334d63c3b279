//! The web page on the public port: the views' addresses answer with the
//! page, and its embedded files come with their content types, compressed
//! as the browser accepts, cached by content hash and revalidated by ETag.

mod common;

use std::path::PathBuf;

use common::{HttpAnswer, System, http};

fn dist() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web/dist")
}

/// The value of `attribute="…"` of the first tag starting with `tag_start`.
fn attribute(html: &str, tag_start: &str, attribute: &str) -> String {
    let tag = &html[html
        .find(tag_start)
        .unwrap_or_else(|| panic!("no {tag_start} in {html}"))..];
    let tag = &tag[..tag.find('>').unwrap()];
    let value = &tag[tag.find(&format!("{attribute}=\"")).unwrap() + attribute.len() + 2..];
    value[..value.find('"').unwrap()].to_owned()
}

fn on_disk(url: &str, suffix: &str) -> Vec<u8> {
    let path = dist().join(format!("{}{suffix}", url.trim_start_matches('/')));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn header<'a>(answer: &'a HttpAnswer, name: &str) -> &'a str {
    answer
        .header(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", answer.headers))
}

#[tokio::test]
async fn the_views_are_the_page_and_its_files_are_served_compressed_and_cached() {
    let system = System::start(&[]).await;
    let addr = system.gateway.addr.clone();

    let page = http(&addr, "GET", "/", &[], b"").await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    let csp = header(&page, "content-security-policy");
    for directive in [
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    let html = page.text();
    let script = attribute(&html, "<script type=\"module\"", "src");
    let style = attribute(&html, "<link rel=\"stylesheet\"", "href");
    assert!(
        script.starts_with("/assets/app-") && script.ends_with(".js"),
        "{script}"
    );
    assert!(
        style.starts_with("/assets/style-") && style.ends_with(".css"),
        "{style}"
    );
    assert!(html.contains("<noscript>"), "{html}");

    // Every view's address is the same page; a game's carries the game.
    for view in [
        "/login",
        "/register",
        "/my-games",
        "/leaderboard",
        "/live",
        "/players/someone",
    ] {
        let answer = http(&addr, "GET", view, &[], b"").await;
        assert_eq!(answer.status, 200, "{view}");
        assert!(answer.text().contains(&script), "{view}");
    }
    for missing in [
        "/players/a/b",
        "/assets/app-00000000.js",
        "/index.html",
        "/favicon.ico",
    ] {
        assert_eq!(
            http(&addr, "GET", missing, &[], b"").await.status,
            404,
            "{missing}"
        );
    }
    let post = http(
        &addr,
        "POST",
        &script,
        &[("Content-Type", "text/plain")],
        b"x",
    )
    .await;
    assert_eq!(post.status, 405);

    // The script in each encoding, byte for byte what web/dist holds.
    for (accept, encoding, suffix) in [
        (None, None, ""),
        (Some("gzip, deflate"), Some("gzip"), ".gz"),
        (Some("gzip, deflate, br, zstd"), Some("br"), ".br"),
        (Some("br;q=0, gzip;q=0.5"), Some("gzip"), ".gz"),
        (Some("identity"), None, ""),
    ] {
        let headers: Vec<(&str, &str)> =
            accept.map(|a| ("Accept-Encoding", a)).into_iter().collect();
        let answer = http(&addr, "GET", &script, &headers, b"").await;
        assert_eq!(answer.status, 200, "{accept:?}");
        assert_eq!(answer.header("content-encoding"), encoding, "{accept:?}");
        assert_eq!(answer.body, on_disk(&script, suffix), "{accept:?}");
        assert_eq!(
            header(&answer, "content-type"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            header(&answer, "cache-control"),
            "public, max-age=31536000, immutable"
        );
        assert_eq!(header(&answer, "vary"), "Accept-Encoding");
        assert_eq!(header(&answer, "x-content-type-options"), "nosniff");
    }
    let css = http(&addr, "GET", &style, &[("Accept-Encoding", "gzip")], b"").await;
    assert_eq!(header(&css, "content-type"), "text/css; charset=utf-8");
    assert_eq!(css.body, on_disk(&style, ".gz"));

    // Revalidation: the ETag of any encoding matches, another does not.
    let first = http(&addr, "GET", &script, &[("Accept-Encoding", "br")], b"").await;
    let etag = header(&first, "etag").to_owned();
    assert!(etag.starts_with('"') && etag.ends_with("-br\""), "{etag}");
    let again = http(
        &addr,
        "GET",
        &script,
        &[("Accept-Encoding", "gzip"), ("If-None-Match", &etag)],
        b"",
    )
    .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let other = http(&addr, "GET", &script, &[("If-None-Match", "\"0123\"")], b"").await;
    assert_eq!(other.status, 200);

    let head = http(&addr, "HEAD", &script, &[], b"").await;
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());

    // The licences: revalidated, never cached blindly, and naming the board.
    let licences = http(&addr, "GET", "/licences", &[], b"").await;
    assert_eq!(licences.status, 200);
    assert_eq!(header(&licences, "cache-control"), "no-cache");
    assert_eq!(
        header(&licences, "content-type"),
        "text/html; charset=utf-8"
    );
    let text = licences.text();
    for package in [
        "@lichess-org/chessground",
        "chessops",
        "@connectrpc/connect-web",
        "GPL-3.0-or-later",
    ] {
        assert!(
            text.contains(package),
            "{package} missing from the licences"
        );
    }
}
