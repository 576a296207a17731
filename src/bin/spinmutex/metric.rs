//! `--metric`: a small regular-expression matcher for pulling one number out of a
//! command's output, without a regex crate.
//!
//! Supported syntax (a subset of the usual regex syntax):
//!
//! * a literal character matches itself; `\` before a punctuation character makes it
//!   literal (`\.`, `\(`, `\[`, `\\`, `\/`, ...);
//! * `.` any character; `\d` `\D` digit / non-digit; `\s` `\S` whitespace / not;
//!   `\w` `\W` word character (letter, digit, `_`) / not;
//! * `[...]` a character class with ranges and the escapes above (`[0-9.]`, `[^ ]`,
//!   `[-+0-9.eE]`); a leading `^` negates it; `]` first or `\]` is literal;
//! * `*`, `+`, `?` after a character, `.`, an escape or a class (greedy, backtracking);
//! * `(` ... `)` a capturing group (no quantifier after it, no alternation);
//! * `^` and `$` anchor at the start and end of a line.
//!
//! The pattern is tried against each line of stdout, then each line of stderr, and the
//! leftmost match in the first matching line wins. The number is the text of the first
//! capture group, or of the whole match when the pattern has no group; it must parse as
//! a decimal number (`12`, `-3.5`, `1e6`) after trimming spaces.
//! Not supported: `|`, `{m,n}`, quantified groups, `(?...)`, backreferences.

#[derive(Debug, Clone, PartialEq)]
enum Class {
    Char(char),
    Any,
    Digit(bool),
    Space(bool),
    Word(bool),
    Set { negated: bool, items: Vec<SetItem> },
}

#[derive(Debug, Clone, PartialEq)]
enum SetItem {
    Range(char, char),
    Class(Class),
}

impl Class {
    fn matches(&self, c: char) -> bool {
        match self {
            Class::Char(x) => *x == c,
            Class::Any => true,
            Class::Digit(pos) => c.is_ascii_digit() == *pos,
            Class::Space(pos) => c.is_whitespace() == *pos,
            Class::Word(pos) => (c.is_alphanumeric() || c == '_') == *pos,
            Class::Set { negated, items } => {
                let hit = items.iter().any(|i| match i {
                    SetItem::Range(a, b) => *a <= c && c <= *b,
                    SetItem::Class(cl) => cl.matches(c),
                });
                hit != *negated
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Quant {
    One,
    ZeroOrOne,
    ZeroOrMore,
    OneOrMore,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Atom(Class, Quant),
    Open(usize),
    Close(usize),
    LineStart,
    LineEnd,
}

/// A compiled `--metric` pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    nodes: Vec<Node>,
    groups: usize,
}

impl Pattern {
    pub fn compile(src: &str) -> Result<Pattern, String> {
        let chars: Vec<char> = src.chars().collect();
        let mut nodes = Vec::new();
        let mut open_stack = Vec::new();
        let mut groups = 0;
        let mut i = 0;
        if src.is_empty() {
            return Err("the pattern is empty".into());
        }
        while i < chars.len() {
            let c = chars[i];
            i += 1;
            let class = match c {
                '(' => {
                    if chars.get(i) == Some(&'?') {
                        return Err("'(?' groups are not supported".into());
                    }
                    nodes.push(Node::Open(groups));
                    open_stack.push(groups);
                    groups += 1;
                    continue;
                }
                ')' => {
                    let g = open_stack.pop().ok_or("unmatched ')'")?;
                    nodes.push(Node::Close(g));
                    if matches!(chars.get(i), Some('*' | '+' | '?' | '{')) {
                        return Err("a quantifier after a group is not supported".into());
                    }
                    continue;
                }
                '^' if nodes.is_empty() => {
                    nodes.push(Node::LineStart);
                    continue;
                }
                '$' if i == chars.len() => {
                    nodes.push(Node::LineEnd);
                    continue;
                }
                '|' => return Err("alternation '|' is not supported".into()),
                '{' => {
                    return Err("'{m,n}' repetition is not supported (write \\{ for a literal brace)".into())
                }
                '*' | '+' | '?' => return Err(format!("'{c}' has nothing to repeat")),
                '.' => Class::Any,
                '[' => {
                    let (class, next) = parse_set(&chars, i)?;
                    i = next;
                    class
                }
                '\\' => {
                    let e = *chars.get(i).ok_or("the pattern ends with '\\'")?;
                    i += 1;
                    escape(e)?
                }
                other => Class::Char(other),
            };
            let quant = match chars.get(i) {
                Some('*') => Quant::ZeroOrMore,
                Some('+') => Quant::OneOrMore,
                Some('?') => Quant::ZeroOrOne,
                _ => Quant::One,
            };
            if quant != Quant::One {
                i += 1;
                if matches!(chars.get(i), Some('*' | '+' | '?')) {
                    return Err("lazy or possessive quantifiers are not supported".into());
                }
            }
            nodes.push(Node::Atom(class, quant));
        }
        if !open_stack.is_empty() {
            return Err("unmatched '('".into());
        }
        Ok(Pattern { source: src.to_string(), nodes, groups })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The first capture group (or the whole match) in the first matching line.
    pub fn find<'a>(&self, text: &'a str) -> Option<&'a str> {
        for line in text.lines() {
            let chars: Vec<(usize, char)> = line.char_indices().collect();
            for start in 0..=chars.len() {
                let mut caps = vec![None; self.groups];
                let mut open = vec![0usize; self.groups];
                if let Some(end) = self.match_here(0, &chars, start, &mut caps, &mut open) {
                    let byte = |k: usize| chars.get(k).map_or(line.len(), |c| c.0);
                    let (s, e) = if self.groups > 0 { caps[0]? } else { (start, end) };
                    return Some(&line[byte(s)..byte(e)]);
                }
                if self.nodes.first() == Some(&Node::LineStart) {
                    break;
                }
            }
        }
        None
    }

    /// The number the pattern picks out of `stdout` (then `stderr`).
    pub fn extract(&self, stdout: &str, stderr: &str) -> Result<f64, String> {
        let found = self
            .find(stdout)
            .or_else(|| self.find(stderr))
            .ok_or_else(|| format!("--metric '{}' matched nothing in the output", self.source))?;
        found
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("--metric '{}' matched '{found}', which is not a number", self.source))
    }

    fn match_here(
        &self,
        ni: usize,
        text: &[(usize, char)],
        ti: usize,
        caps: &mut Vec<Option<(usize, usize)>>,
        open: &mut Vec<usize>,
    ) -> Option<usize> {
        let Some(node) = self.nodes.get(ni) else { return Some(ti) };
        match node {
            Node::LineStart => (ti == 0).then_some(())?,
            Node::LineEnd => (ti == text.len()).then_some(())?,
            Node::Open(g) => {
                let saved = open[*g];
                open[*g] = ti;
                let r = self.match_here(ni + 1, text, ti, caps, open);
                if r.is_none() {
                    open[*g] = saved;
                }
                return r;
            }
            Node::Close(g) => {
                let saved = caps[*g];
                caps[*g] = Some((open[*g], ti));
                let r = self.match_here(ni + 1, text, ti, caps, open);
                if r.is_none() {
                    caps[*g] = saved;
                }
                return r;
            }
            Node::Atom(class, quant) => {
                let (min, max) = match quant {
                    Quant::One => (1, 1),
                    Quant::ZeroOrOne => (0, 1),
                    Quant::ZeroOrMore => (0, usize::MAX),
                    Quant::OneOrMore => (1, usize::MAX),
                };
                let mut n = 0;
                while n < max && ti + n < text.len() && class.matches(text[ti + n].1) {
                    n += 1;
                }
                if n < min {
                    return None;
                }
                loop {
                    if let Some(end) = self.match_here(ni + 1, text, ti + n, caps, open) {
                        return Some(end);
                    }
                    if n == min {
                        return None;
                    }
                    n -= 1;
                }
            }
        }
        self.match_here(ni + 1, text, ti, caps, open)
    }
}

fn escape(e: char) -> Result<Class, String> {
    Ok(match e {
        'd' => Class::Digit(true),
        'D' => Class::Digit(false),
        's' => Class::Space(true),
        'S' => Class::Space(false),
        'w' => Class::Word(true),
        'W' => Class::Word(false),
        't' => Class::Char('\t'),
        c if c.is_ascii_punctuation() || c == ' ' => Class::Char(c),
        c => return Err(format!("unsupported escape '\\{c}'")),
    })
}

/// Parses a class whose `[` is just before `i`; returns it and the index after `]`.
fn parse_set(chars: &[char], mut i: usize) -> Result<(Class, usize), String> {
    let mut negated = false;
    if chars.get(i) == Some(&'^') {
        negated = true;
        i += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    loop {
        let c = *chars.get(i).ok_or("unterminated '[' class")?;
        i += 1;
        if c == ']' && !first {
            break;
        }
        first = false;
        let lo = if c == '\\' {
            let e = *chars.get(i).ok_or("unterminated '[' class")?;
            i += 1;
            match escape(e)? {
                Class::Char(ch) => ch,
                other => {
                    items.push(SetItem::Class(other));
                    continue;
                }
            }
        } else {
            c
        };
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&n| n != ']') {
            let mut hi = chars[i + 1];
            i += 2;
            if hi == '\\' {
                hi = *chars.get(i).ok_or("unterminated '[' class")?;
                i += 1;
            }
            if hi < lo {
                return Err(format!("bad range '{lo}-{hi}' in class"));
            }
            items.push(SetItem::Range(lo, hi));
        } else {
            items.push(SetItem::Range(lo, lo));
        }
    }
    Ok((Class::Set { negated, items }, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(p: &str, text: &str) -> Option<String> {
        Pattern::compile(p).unwrap().find(text).map(String::from)
    }

    #[test]
    fn literal_prefix_and_number() {
        assert_eq!(find(r"ops/s=([0-9.]+)", "x\nthroughput ops/s=1234.5 done\n").as_deref(), Some("1234.5"));
        assert_eq!(find(r"time: *(\d+\.\d+) ms", "time:   12.50 ms").as_deref(), Some("12.50"));
        assert_eq!(find(r"\d+", "abc 42 7").as_deref(), Some("42"));
        assert_eq!(find(r"^total (\S+)$", "subtotal 3\ntotal 9\n").as_deref(), Some("9"));
        assert_eq!(find(r"a(b*)c", "ac").as_deref(), Some(""));
        assert_eq!(find(r"x=([-+]?[0-9.eE]+)", "x=-1.5e3").as_deref(), Some("-1.5e3"));
        assert_eq!(find(r"v=(\d+)", "nothing here"), None);
        // Backtracking: the greedy `.*` gives back what the rest needs.
        assert_eq!(find(r".*=(\d+)", "a=1 b=22").as_deref(), Some("22"));
        assert_eq!(find(r"[^=]+=(\w+)", "key=val").as_deref(), Some("val"));
        assert_eq!(find(r"\(([0-9]+)\)", "f(12)").as_deref(), Some("12"));
        assert_eq!(find(r"ops/s=([0-9.]+)", "é ops/s=5").as_deref(), Some("5"));
    }

    #[test]
    fn extract_parses_numbers() {
        let p = Pattern::compile(r"rate ([0-9.]+)").unwrap();
        assert_eq!(p.extract("rate 2.5\n", ""), Ok(2.5));
        assert_eq!(p.extract("", "rate 7\n"), Ok(7.0));
        assert!(p.extract("rate .\n", "").is_err());
        assert!(p.extract("none", "").is_err());
    }

    #[test]
    fn rejects_unsupported_syntax() {
        for bad in ["", "a|b", "(ab", "ab)", "(ab)+", "*a", "a{2}", "[abc", "\\q", "(?:a)", "a+?", "[z-a]"] {
            assert!(Pattern::compile(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
