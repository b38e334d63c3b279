//! HTML: escaping, the frame every page shares, and the board as a table.

use std::fmt::Write as _;

use chess_domain::color_name;
use shakmaty::{Board, File, Piece, Rank, Role, Square};

/// `text` safe to put in HTML content and in quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:0;padding:1rem;color:#222;background:#fafafa}
main{max-width:44rem;margin:auto}
h1{font-size:1.4rem;margin:.2rem 0}
.meta{color:#555}
.status{font-weight:600}
table.board{border-collapse:collapse;margin:1rem 0;user-select:none}
table.board td,table.board th{width:2.6rem;height:2.6rem;text-align:center;padding:0}
table.board td{font-size:2rem;line-height:1}
table.board th{font-weight:400;color:#777;font-size:.8rem}
td.light{background:#f0d9b5}
td.dark{background:#b58863}
td.last.light{background:#cdd26a}
td.last.dark{background:#aaa23a}
ol.moves{columns:2;padding-left:2.5rem}
code{font-size:.85em;word-break:break-all}
";

/// The site's icon, inline (a knight), so that browsers ask for no file.
const FAVICON: &str = "<link rel=\"icon\" href=\"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' \
     viewBox='0 0 100 100'%3E%3Ctext y='.9em' font-size='90'%3E%E2%99%9E%3C/text%3E%3C/svg%3E\">";

/// A whole page titled `title` (plain text) around `body` (HTML). The page
/// also loads the web page's script, which replaces `<main>` with the live
/// view of the same address (and removes the static style); without
/// scripts, `body` is what the reader gets.
pub fn frame(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · Rookery</title>\n{FAVICON}\n<link rel=\"stylesheet\" href=\"{}\">\n\
         <script type=\"module\" src=\"{}\"></script>\n\
         <style id=\"static-style\">\n{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n</body>\n</html>\n",
        escape(title),
        super::assets::STYLE_CSS,
        super::assets::APP_JS,
    )
}

/// The page for the views the script draws (the lobby, sign-in, …): what
/// shows until it has loaded, or instead of it without scripts.
pub fn app_shell() -> String {
    frame(
        "Play chess",
        "<h1>Rookery</h1>\n<p class=\"meta\">Loading…</p>\n<noscript><p>This page needs JavaScript \
         to play. Without it, games can be played with <code>uqchessclient</code> or any gRPC \
         client of the public API.</p></noscript>\n",
    )
}

/// The Unicode figure of `piece`: white's king to pawn are U+2654 to
/// U+2659, black's the six after (shown followed by U+FE0E, which asks for
/// text, not emoji, presentation).
fn figure(piece: Piece) -> char {
    let king: u32 = piece.color.fold_wb(0x2654, 0x265a);
    // `Role` counts from the pawn (1) to the king (6).
    char::from_u32(king + 6 - piece.role as u32).unwrap_or('?')
}

/// What a screen reader says for `piece`.
fn piece_name(piece: Piece) -> String {
    let colour = color_name(piece.color);
    let role = match piece.role {
        Role::King => "king",
        Role::Queen => "queen",
        Role::Rook => "rook",
        Role::Bishop => "bishop",
        Role::Knight => "knight",
        Role::Pawn => "pawn",
    };
    format!("{colour} {role}")
}

/// `board` as an 8×8 table from white's side, rank and file labels around
/// it, the squares in `marked` (the last move's) highlighted.
pub fn board(board: &Board, marked: &[Square]) -> String {
    let mut out = String::from("<table class=\"board\" aria-label=\"The position\">\n");
    let files = || {
        let mut row = String::from("<tr><th></th>");
        for file in File::ALL {
            let _ = write!(row, "<th>{}</th>", file.char());
        }
        row.push_str("<th></th></tr>\n");
        row
    };
    out.push_str(&files());
    for rank in Rank::ALL.into_iter().rev() {
        let _ = write!(out, "<tr><th>{}</th>", rank.char());
        for file in File::ALL {
            let square = Square::from_coords(file, rank);
            // a1 is dark.
            let shade = if (u32::from(file) + u32::from(rank)) % 2 == 0 {
                "dark"
            } else {
                "light"
            };
            let last = if marked.contains(&square) {
                " last"
            } else {
                ""
            };
            match board.piece_at(square) {
                Some(piece) => {
                    let _ = write!(
                        out,
                        "<td class=\"{shade}{last}\" title=\"{square}: {}\">{}\u{fe0e}</td>",
                        piece_name(piece),
                        figure(piece)
                    );
                }
                None => {
                    let _ = write!(out, "<td class=\"{shade}{last}\" title=\"{square}\"></td>");
                }
            }
        }
        let _ = writeln!(out, "<th>{}</th></tr>", rank.char());
    }
    out.push_str(&files());
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_that_could_open_markup_is_escaped() {
        assert_eq!(
            escape(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape("plain ♔"), "plain ♔");
        let page = frame("<b>", "<p>ok</p>");
        assert!(page.contains("<title>&lt;b&gt; · Rookery</title>"));
        assert!(page.starts_with("<!DOCTYPE html>"));
    }

    #[test]
    fn the_starting_position_is_drawn_from_whites_side() {
        let html = board(&Board::default(), &[Square::E2, Square::E4]);
        assert_eq!(html.matches("<tr>").count(), 10);
        assert_eq!(html.matches("<td").count(), 64);
        // Rank 8 comes first: the black pieces, a8 a light square.
        let eighth = html.find("<th>8</th>").unwrap();
        let first = html.find("<th>1</th>").unwrap();
        assert!(eighth < first);
        assert!(html[eighth..].starts_with(
            "<th>8</th><td class=\"light\" title=\"a8: black rook\">\u{265c}\u{fe0e}</td>"
        ));
        assert!(html.contains("<td class=\"dark\" title=\"a1: white rook\">"));
        assert!(html.contains("<td class=\"light last\" title=\"e2: white pawn\">"));
        assert!(html.contains("<td class=\"light last\" title=\"e4\"></td>"));
        assert_eq!(html.matches('\u{2659}').count(), 8);
        assert_eq!(html.matches('\u{265f}').count(), 8);
    }
}
