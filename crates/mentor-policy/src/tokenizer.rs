//! The tokenizer: a `tokenizers::Tokenizer` plus the ids generation needs (end-of-sequence,
//! padding) and the special-token strings chat templates refer to.
//!
//! Three sources: a `tokenizer.json` (HF checkpoints), GGUF metadata ([`crate::gguf`]), or a
//! character-level vocabulary for from-scratch models ([`Tokenizer::char_level`]). Encoding
//! never adds special tokens on its own: chat templates write them as text, and they encode to
//! single ids.

use std::path::Path;

use tokenizers::decoders::fuse::Fuse;
use tokenizers::models::wordlevel::WordLevel;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior};

use crate::error::{Error, Result};

/// Special-token strings of a tokenizer (as written in `tokenizer_config.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    /// Beginning-of-sequence token text, exposed to chat templates as `bos_token`.
    pub bos: Option<String>,
    /// End-of-sequence token text, exposed to chat templates as `eos_token`.
    pub eos: Option<String>,
    /// Padding token text.
    pub pad: Option<String>,
}

/// A tokenizer with its stop ids.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    special: SpecialTokens,
    stop_ids: Vec<u32>,
    pad_id: u32,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("special", &self.special)
            .field("stop_ids", &self.stop_ids)
            .finish()
    }
}

/// Text of the special tokens of the character-level tokenizer.
pub const CHAR_PAD: &str = "<pad>";
/// End-of-sequence token of the character-level tokenizer.
pub const CHAR_EOS: &str = "<eos>";
/// Beginning-of-sequence token of the character-level tokenizer.
pub const CHAR_BOS: &str = "<bos>";
/// Unknown-character token of the character-level tokenizer.
pub const CHAR_UNK: &str = "<unk>";

impl Tokenizer {
    /// Wraps a `tokenizers::Tokenizer`. `stop_ids` end generation; the end-of-sequence token's id
    /// (if it is in the vocabulary) is added to them. The pad id is the pad token's id, else
    /// the first stop id, else 0 (pads are masked, so any valid id works).
    pub fn new(inner: tokenizers::Tokenizer, special: SpecialTokens, stop_ids: Vec<u32>) -> Self {
        let mut stop_ids = stop_ids;
        if let Some(id) = special.eos.as_deref().and_then(|e| inner.token_to_id(e)) {
            if !stop_ids.contains(&id) {
                stop_ids.push(id);
            }
        }
        let pad_id = special
            .pad
            .as_deref()
            .and_then(|p| inner.token_to_id(p))
            .or(stop_ids.first().copied())
            .unwrap_or(0);
        Self { inner, special, stop_ids, pad_id }
    }

    /// Reads a `tokenizer.json`.
    pub fn from_file(path: &Path, special: SpecialTokens, stop_ids: Vec<u32>) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| Error::Tokenizer(format!("{}: {e}", path.display())))?;
        Ok(Self::new(inner, special, stop_ids))
    }

    /// A character-level tokenizer for from-scratch models: ids 0..4 are `<pad>`, `<bos>`,
    /// `<eos>`, `<unk>` (special), then one id per distinct character of `alphabet` in order
    /// of first appearance. Characters outside the alphabet encode to `<unk>`.
    pub fn char_level(alphabet: &str) -> Result<Self> {
        let mut vocab = tokenizers::models::bpe::Vocab::default();
        for (i, s) in [CHAR_PAD, CHAR_BOS, CHAR_EOS, CHAR_UNK].iter().enumerate() {
            vocab.insert((*s).to_string(), i as u32);
        }
        for c in alphabet.chars() {
            let n = vocab.len() as u32;
            vocab.entry(c.to_string()).or_insert(n);
        }
        let model =
            WordLevel::builder().vocab(vocab).unk_token(CHAR_UNK.into()).build().map_err(Error::tokenizer)?;
        let mut inner = tokenizers::Tokenizer::new(model);
        let split = Split::new(SplitPattern::Regex("(?s).".into()), SplitDelimiterBehavior::Isolated, false)
            .map_err(Error::tokenizer)?;
        inner.with_pre_tokenizer(Some(split));
        inner.with_decoder(Some(Fuse::new()));
        let specials = [CHAR_PAD, CHAR_BOS, CHAR_EOS, CHAR_UNK].map(|s| AddedToken::from(s, true));
        inner.add_special_tokens(specials).map_err(Error::tokenizer)?;
        let special = SpecialTokens {
            bos: Some(CHAR_BOS.into()),
            eos: Some(CHAR_EOS.into()),
            pad: Some(CHAR_PAD.into()),
        };
        Ok(Self::new(inner, special, vec![]))
    }

    /// Encodes text to ids. Special tokens written in the text become their single ids; no
    /// BOS/EOS is added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.inner.encode(text, false).map_err(Error::tokenizer)?.get_ids().to_vec())
    }

    /// Decodes ids to text; with `skip_special` special tokens are left out.
    pub fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.inner.decode(ids, skip_special).map_err(Error::tokenizer)
    }

    /// Id of a token string.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Number of ids (including added tokens).
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Ids that end generation.
    pub fn stop_ids(&self) -> &[u32] {
        &self.stop_ids
    }

    /// Id used for padding.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    /// Special-token strings.
    pub fn special_tokens(&self) -> &SpecialTokens {
        &self.special
    }

    /// The wrapped `tokenizers::Tokenizer`.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    /// Writes `tokenizer.json`.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.inner.save(path, false).map_err(|e| Error::Tokenizer(format!("save {}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_level_round_trips_and_marks_unknowns() {
        let t = Tokenizer::char_level("0123456789+-=*/ \nabc").unwrap();
        assert_eq!(t.vocab_size(), 4 + 20);
        let text = "12+3=15\nabc";
        let ids = t.encode(text).unwrap();
        assert_eq!(ids.len(), text.chars().count());
        assert_eq!(t.decode(&ids, false).unwrap(), text);
        assert_eq!(t.encode("<eos>1").unwrap(), vec![2, 5]);
        assert_eq!(t.encode("z").unwrap(), vec![3]);
        assert_eq!(t.stop_ids(), &[2]);
        assert_eq!(t.pad_id(), 0);
        assert_eq!(t.decode(&[5, 2], true).unwrap(), "1");
    }
}
