//! Text analysis per language for the lexical side of Excerpt: what a text's searched
//! words are. Compute-only (no IO).
//!
//! - [`Language`]: a language, as whatlang names it (ISO 639-3 codes, `eng`, `cmn`,
//!   `tha`…); [`detect`] finds a document's, [`detect_query`] a query's when the query
//!   says it clearly, [`language_of`] reads one a user set (metadata key
//!   [`LANGUAGE_KEY`]) before detecting.
//! - [`analyze`]: a text's terms in a language, each with its byte range. English is
//!   analysed exactly as tantivy's `en_stem` always did here (alphanumeric runs, tokens of
//!   40 bytes or more dropped, lower-cased, Porter 2 stems), so English indexes, scores
//!   and results do not change. Every other language goes through charabia (Meilisearch's
//!   tokenizer): words segmented per script (jieba for Chinese, a dictionary for Thai,
//!   Arabic `ال` split off, German compounds), normalised per script (compatibility
//!   decomposition, case folding, marks), then reduced by the language's Snowball stemmer
//!   where one exists (frostem; none for Chinese, Thai, Vietnamese…).
//! - [`Analysis`]: the analysis an index was made with, recorded in the index.

use std::borrow::Cow;

use charabia::TokenizerBuilder;
use frostem::Algorithm;
use whatlang::{Lang, Script};

/// The metadata key holding a document's language (set by a user, or detected at
/// ingest): an ISO 639-3 code (`eng`, `deu`, `cmn`), an ISO 639-1 code (`en`, `de`,
/// `zh`) or an English name (`German`).
pub const LANGUAGE_KEY: &str = "language";

/// Tokens of this many bytes or more are dropped from English text (tantivy's
/// `RemoveLongFilter::limit(40)` in `en_stem`); in other languages, tokens of more than
/// this many characters.
const LONG_TOKEN: usize = 40;

/// How an index analyses its text, recorded in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Analysis {
    /// English for every document (tantivy's `en_stem`): indexes made before analysis
    /// per language. Rebuilding such an index (a new index directory) analyses each
    /// document in its own language.
    English,
    /// Each document in its language ([`analyze`] with [`language_of`]); a query in its
    /// own language when it says it clearly and the index holds it, else in every
    /// language the index holds, the terms joined.
    PerLanguage,
}

/// A language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Language(Lang);

impl Language {
    /// English.
    pub const ENGLISH: Language = Language(Lang::Eng);

    /// The language `name` names: an ISO 639-3 code, an ISO 639-1 code or an English
    /// name, in any case; `None` for anything else.
    pub fn parse(name: &str) -> Option<Language> {
        let name = name.trim().to_lowercase();
        if let Some(lang) = Lang::from_code(name.as_str()) {
            return Some(Language(lang));
        }
        if let Some(lang) = iso_639_1(&name) {
            return Some(Language(lang));
        }
        Lang::all()
            .iter()
            .find(|l| l.eng_name().eq_ignore_ascii_case(&name))
            .map(|&l| Language(l))
    }

    /// The ISO 639-3 code (`eng`, `cmn`).
    pub fn code(self) -> &'static str {
        self.0.code()
    }

    /// The English name (`English`, `Mandarin`).
    pub fn name(self) -> &'static str {
        self.0.eng_name()
    }

    /// The Snowball stemmer of the language, if one exists.
    fn stemmer(self) -> Option<Algorithm> {
        Some(match self.0 {
            Lang::Ara => Algorithm::Arabic,
            Lang::Hye => Algorithm::Armenian,
            Lang::Cat => Algorithm::Catalan,
            Lang::Ces => Algorithm::Czech,
            Lang::Dan => Algorithm::Danish,
            Lang::Nld => Algorithm::Dutch,
            Lang::Eng => Algorithm::English,
            Lang::Epo => Algorithm::Esperanto,
            Lang::Est => Algorithm::Estonian,
            Lang::Fin => Algorithm::Finnish,
            Lang::Fra => Algorithm::French,
            Lang::Deu => Algorithm::German,
            Lang::Ell => Algorithm::Greek,
            Lang::Hin => Algorithm::Hindi,
            Lang::Hun => Algorithm::Hungarian,
            Lang::Ind => Algorithm::Indonesian,
            Lang::Ita => Algorithm::Italian,
            Lang::Lit => Algorithm::Lithuanian,
            Lang::Nep => Algorithm::Nepali,
            Lang::Nob => Algorithm::Norwegian,
            Lang::Pes => Algorithm::Persian,
            Lang::Pol => Algorithm::Polish,
            Lang::Por => Algorithm::Portuguese,
            Lang::Ron => Algorithm::Romanian,
            Lang::Rus => Algorithm::Russian,
            Lang::Srp => Algorithm::Serbian,
            Lang::Spa => Algorithm::Spanish,
            Lang::Swe => Algorithm::Swedish,
            Lang::Tam => Algorithm::Tamil,
            Lang::Tur => Algorithm::Turkish,
            Lang::Yid => Algorithm::Yiddish,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// The language of an ISO 639-1 code, for the languages whatlang knows.
fn iso_639_1(code: &str) -> Option<Lang> {
    Some(match code {
        "af" => Lang::Afr,
        "am" => Lang::Amh,
        "ar" => Lang::Ara,
        "az" => Lang::Aze,
        "be" => Lang::Bel,
        "bg" => Lang::Bul,
        "bn" => Lang::Ben,
        "ca" => Lang::Cat,
        "cs" => Lang::Ces,
        "da" => Lang::Dan,
        "de" => Lang::Deu,
        "el" => Lang::Ell,
        "en" => Lang::Eng,
        "eo" => Lang::Epo,
        "es" => Lang::Spa,
        "et" => Lang::Est,
        "fa" => Lang::Pes,
        "fi" => Lang::Fin,
        "fr" => Lang::Fra,
        "gu" => Lang::Guj,
        "he" => Lang::Heb,
        "hi" => Lang::Hin,
        "hr" => Lang::Hrv,
        "hu" => Lang::Hun,
        "hy" => Lang::Hye,
        "id" => Lang::Ind,
        "it" => Lang::Ita,
        "ja" => Lang::Jpn,
        "jv" => Lang::Jav,
        "ka" => Lang::Kat,
        "km" => Lang::Khm,
        "kn" => Lang::Kan,
        "ko" => Lang::Kor,
        "la" => Lang::Lat,
        "lt" => Lang::Lit,
        "lv" => Lang::Lav,
        "mk" => Lang::Mkd,
        "ml" => Lang::Mal,
        "mr" => Lang::Mar,
        "my" => Lang::Mya,
        "nb" | "no" => Lang::Nob,
        "ne" => Lang::Nep,
        "nl" => Lang::Nld,
        "or" => Lang::Ori,
        "pa" => Lang::Pan,
        "pl" => Lang::Pol,
        "pt" => Lang::Por,
        "ro" => Lang::Ron,
        "ru" => Lang::Rus,
        "si" => Lang::Sin,
        "sk" => Lang::Slk,
        "sl" => Lang::Slv,
        "sn" => Lang::Sna,
        "sr" => Lang::Srp,
        "sv" => Lang::Swe,
        "ta" => Lang::Tam,
        "te" => Lang::Tel,
        "th" => Lang::Tha,
        "tk" => Lang::Tuk,
        "tl" => Lang::Tgl,
        "tr" => Lang::Tur,
        "uk" => Lang::Ukr,
        "ur" => Lang::Urd,
        "uz" => Lang::Uzb,
        "vi" => Lang::Vie,
        "yi" => Lang::Yid,
        "zh" => Lang::Cmn,
        "zu" => Lang::Zul,
        _ => return None,
    })
}

/// Bytes of a document that [`detect`] reads (its beginning): enough for whatlang's
/// trigrams to be sure, and a bounded cost per document.
const DETECTED_BYTES: usize = 16 * 1024;

/// The language of a document's `text`: whatlang's guess when it is reliable, else the
/// main language of the text's script (Latin: English, Cyrillic: Russian, Han:
/// Mandarin…), English when nothing tells.
pub fn detect(text: &str) -> Language {
    let sample = prefix(text, DETECTED_BYTES);
    match whatlang::detect(sample) {
        Some(info) if info.is_reliable() => Language(info.lang()),
        Some(info) => Language(script_language(info.script()).unwrap_or(info.lang())),
        None => Language::ENGLISH,
    }
}

/// The language of a query when the query says it clearly: whatlang's reliable guess,
/// or the one language of a script that only one language in whatlang writes (Thai,
/// Greek, Hangul, kana…); `None` when unclear (a short Latin-script question may be in
/// any of several languages).
pub fn detect_query(text: &str) -> Option<Language> {
    let info = whatlang::detect(text)?;
    if info.is_reliable() {
        return Some(Language(info.lang()));
    }
    match info.script() {
        Script::Thai => Some(Language(Lang::Tha)),
        Script::Greek => Some(Language(Lang::Ell)),
        Script::Hangul => Some(Language(Lang::Kor)),
        Script::Hiragana | Script::Katakana => Some(Language(Lang::Jpn)),
        Script::Mandarin => Some(Language(Lang::Cmn)),
        Script::Khmer => Some(Language(Lang::Khm)),
        Script::Georgian => Some(Language(Lang::Kat)),
        Script::Armenian => Some(Language(Lang::Hye)),
        _ => None,
    }
}

/// The language a user set (`set`, the document's [`LANGUAGE_KEY`] metadata) when it
/// names one, else the detected language of `text`.
pub fn language_of(set: Option<&str>, text: &str) -> Language {
    set.and_then(Language::parse)
        .unwrap_or_else(|| detect(text))
}

/// The language most texts of `script` are in, for a guess that is not reliable.
fn script_language(script: Script) -> Option<Lang> {
    Some(match script {
        Script::Latin => Lang::Eng,
        Script::Cyrillic => Lang::Rus,
        Script::Arabic => Lang::Ara,
        Script::Devanagari => Lang::Hin,
        Script::Mandarin => Lang::Cmn,
        Script::Hiragana | Script::Katakana => Lang::Jpn,
        Script::Hangul => Lang::Kor,
        Script::Thai => Lang::Tha,
        Script::Greek => Lang::Ell,
        Script::Hebrew => Lang::Heb,
        _ => return None,
    })
}

/// The longest prefix of `text` of at most `bytes` bytes that ends on a character.
fn prefix(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One term of an analysed text: the searched form, and the byte range of the word it
/// came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The normalised (and stemmed) form searched for.
    pub text: String,
    /// First byte of the word in the analysed text.
    pub start: usize,
    /// End byte of the word.
    pub end: usize,
}

/// The terms of `text` in `language`, in order (see the crate's overview).
pub fn analyze(text: &str, language: Language) -> Vec<Term> {
    if language == Language::ENGLISH {
        return english(text);
    }
    let stemmer = language.stemmer().map(frostem::Stemmer::new);
    let allow = [charabia::Language::from(language.0)];
    let mut builder = TokenizerBuilder::default();
    builder.allow_list(&allow);
    let tokenizer = builder.build();
    tokenizer
        .tokenize(text)
        .filter(|t| t.is_word())
        .filter(|t| t.lemma().chars().nth(LONG_TOKEN).is_none())
        .map(|t| {
            let lemma = t.lemma();
            let text = match &stemmer {
                Some(s) => s.stem(lemma).into_owned(),
                None => lemma.to_string(),
            };
            Term {
                text,
                start: t.byte_start,
                end: t.byte_end,
            }
        })
        .collect()
}

/// The terms of `text` as tantivy's `en_stem` analyser gives them: runs of alphanumeric
/// characters, those of 40 bytes or more dropped, lower-cased character by character,
/// reduced to their Porter 2 stems.
pub fn english(text: &str) -> Vec<Term> {
    let stemmer = frostem::Stemmer::new(Algorithm::English);
    let mut out = Vec::new();
    let mut start = None;
    let push = |from: usize, to: usize, out: &mut Vec<Term>| {
        let word = &text[from..to];
        if word.len() >= LONG_TOKEN {
            return;
        }
        let lower: Cow<str> = if word.is_ascii() {
            Cow::Owned(word.to_ascii_lowercase())
        } else {
            Cow::Owned(word.chars().flat_map(char::to_lowercase).collect())
        };
        out.push(Term {
            text: stemmer.stem(&lower).into_owned(),
            start: from,
            end: to,
        });
    };
    for (at, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                push(from, at, &mut out);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(from) = start {
        push(from, text.len(), &mut out);
    }
    out
}

/// Whether `text` holds characters of a script whose words alphanumeric runs do not
/// find: scripts written without spaces between words (Chinese, Japanese, Thai, Lao,
/// Khmer, Myanmar) or whose words hold marks that are not alphanumeric (the viramas and
/// vowel signs of the Indic scripts), or Hangul.
pub fn needs_segmentation(text: &str) -> bool {
    !text.is_ascii()
        && text.chars().any(|c| {
            matches!(c as u32,
                0x0900..=0x0DFF // Indic scripts (Devanagari … Sinhala)
                | 0x0E00..=0x0EFF // Thai, Lao
                | 0x1000..=0x109F // Myanmar
                | 0x1780..=0x17FF // Khmer
                | 0x3040..=0x30FF // kana
                | 0x3400..=0x4DBF
                | 0x4E00..=0x9FFF
                | 0xF900..=0xFAFF // Han
                | 0xAC00..=0xD7AF // Hangul
            )
        })
}

/// The words of `text`, as slices of it, in order, for a text that
/// [`needs_segmentation`]: charabia's segmentation per script (jieba for Han, a
/// dictionary for Thai, UAX #29 words elsewhere), without the separators.
pub fn segment_words(text: &str) -> Vec<&str> {
    static TOKENIZER: std::sync::OnceLock<charabia::Tokenizer<'static>> =
        std::sync::OnceLock::new();
    let tokenizer = TOKENIZER.get_or_init(|| TokenizerBuilder::default().into_tokenizer());
    tokenizer
        .segment_str(text)
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .collect()
}

/// `word` (lower-cased) reduced by the Snowball stemmer of the main language of its
/// script: Latin English, Cyrillic Russian, Greek Greek, Arabic Arabic, Devanagari
/// Hindi; unchanged in any other script. For a route that reads words without knowing
/// their document's language (the sentence route's memo of terms by word).
pub fn stem_by_script(word: &str) -> Cow<'_, str> {
    let algorithm = match word.chars().find(|c| c.is_alphabetic()).map(|c| c as u32) {
        None => Algorithm::English,
        Some(c) => match c {
            0..=0x024F => Algorithm::English,
            0x0370..=0x03FF | 0x1F00..=0x1FFF => Algorithm::Greek,
            0x0400..=0x052F => Algorithm::Russian,
            0x0600..=0x06FF => Algorithm::Arabic,
            0x0900..=0x097F => Algorithm::Hindi,
            _ => return Cow::Borrowed(word),
        },
    };
    frostem::Stemmer::new(algorithm).stem(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str, language: &str) -> Vec<String> {
        analyze(text, Language::parse(language).expect("language"))
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn languages_are_named_by_either_code_or_name() {
        for name in ["de", "deu", "German", "DE"] {
            assert_eq!(Language::parse(name).map(Language::code), Some("deu"));
        }
        assert_eq!(Language::parse("zh").map(Language::code), Some("cmn"));
        assert_eq!(Language::parse("klingon"), None);
    }

    #[test]
    fn documents_are_detected_by_text_and_script() {
        let de = "Die Bundesrepublik Deutschland ist ein Bundesstaat in Mitteleuropa. Sie \
                  besteht aus sechzehn Ländern und ist eine parlamentarische Demokratie.";
        assert_eq!(detect(de).code(), "deu");
        assert_eq!(
            detect("北京是中华人民共和国的首都，也是全国的政治中心。").code(),
            "cmn"
        );
        assert_eq!(detect("ภาษาไทยเป็นภาษาราชการของประเทศไทย").code(), "tha");
        assert_eq!(detect("").code(), "eng");
    }

    #[test]
    fn chinese_and_thai_are_cut_into_words() {
        let zh = words("北京是中华人民共和国的首都", "zh");
        assert!(zh.len() >= 4, "{zh:?}");
        assert!(zh.iter().any(|w| w == "北京"), "{zh:?}");
        let th = words("ภาษาไทยเป็นภาษาราชการของประเทศไทย", "th");
        assert!(th.len() >= 4, "{th:?}");
        assert!(
            th.iter().any(|w| w == "ประเทศ" || w == "ประเทศไทย"),
            "{th:?}"
        );
    }

    #[test]
    fn words_of_unspaced_scripts_are_segmented() {
        assert!(!needs_segmentation("Plain English, naïve café."));
        assert!(needs_segmentation("他说北京"));
        let words = segment_words("北京是中华人民共和国的首都。Paris too");
        assert!(words.contains(&"首都"), "{words:?}");
        assert!(words.contains(&"Paris"), "{words:?}");
        assert!(!words.contains(&"。"), "{words:?}");
        let hi = segment_words("हिन्दी भारत की राष्ट्रभाषा है।");
        assert_eq!(hi[0], "हिन्दी", "a virama does not cut a word: {hi:?}");
        assert_eq!(stem_by_script("running"), "run");
        assert_eq!(stem_by_script("首都"), "首都");
    }

    #[test]
    fn other_languages_get_their_own_stemmer() {
        assert_eq!(
            words("Москвы Москва", "ru"),
            ["москв", "москв"],
            "Russian stems"
        );
        assert_eq!(words("Häuser Haus", "de")[1], "haus");
    }

    #[test]
    fn english_terms_are_alphanumeric_runs_lowercased_and_stemmed() {
        let terms = english("Running DOGS, naïve café-x 3.14 Ωmega");
        let texts: Vec<&str> = terms.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            texts,
            ["run", "dog", "naïv", "café", "x", "3", "14", "ωmega"]
        );
        assert_eq!((terms[0].start, terms[0].end), (0, 7));
        let long = "a".repeat(40);
        assert!(english(&long).is_empty());
        assert_eq!(english(&"a".repeat(39)).len(), 1);
    }
}
