#!/usr/bin/env python3
"""Makes the tiny XLM-RoBERTa models the embed crate's tests hold our forward pass to.

Two random-weight models, each a few hundred kilobytes, with a SentencePiece-style
(Unigram) tokenizer trained here on a few hundred words of text in several scripts:

- crates/embed/tests/data/xlmr-embedder/: an `XLMRobertaModel` laid out as a
  sentence-transformers model (mean pooling, e5's `query: ` / `passage: ` prompts in
  config_sentence_transformers.json), and reference.json with PyTorch's vectors of
  some texts as passages and as queries (mean pooled over the attention mask and
  L2-normalised, as sentence-transformers does; also the first token's vector, for
  CLS pooling);
- crates/embed/tests/data/xlmr-reranker/: an `XLMRobertaForSequenceClassification`
  with one label, and reference.json with PyTorch's logits of some (query, passage)
  pairs.

The position table is small (66 rows: 64 tokens after the padding offset), so one text
and one pair are long enough to be truncated. Everything is seeded: running it again
writes the same files (with the same library versions).

How to run it, from the repository root, in a virtual environment outside the
repository (torch from PyPI is a few GB):

    python3 -m venv "$VENV"
    "$VENV/bin/pip" install torch transformers tokenizers safetensors
    "$VENV/bin/python" scripts/make-xlmr-fixtures.py

Then check the sizes with `python3 scripts/check-sizes.py`.
"""

import json
import math
import shutil
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers
from transformers import (
    XLMRobertaConfig,
    XLMRobertaForSequenceClassification,
    XLMRobertaModel,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "crates" / "embed" / "tests" / "data"

SEED = 60
HIDDEN = 32
LAYERS = 2
HEADS = 2
INTERMEDIATE = 64
PAD_ID = 1
# 64 usable positions: XLM-RoBERTa numbers tokens from pad_token_id + 1.
MAX_POSITIONS = 66
MAX_TOKENS = MAX_POSITIONS - PAD_ID - 1
VOCAB_SIZE = 700

PROMPTS = {"query": "query: ", "passage": "passage: "}

# Training text for the tokenizer, written for these fixtures.
CORPUS = [
    "The river runs past the old mill and under the stone bridge.",
    "A small library opens every morning at nine and closes at six.",
    "Search engines split long documents into passages before ranking them.",
    "The recipe needs flour, water, salt and a little patience.",
    "Trains to the coast leave twice an hour from the northern station.",
    "She wrote the report in the evening and sent it before midnight.",
    "Der Fluss fließt am alten Bahnhof vorbei in Richtung Norden.",
    "Die Bibliothek hat heute wegen einer Veranstaltung länger geöffnet.",
    "Wir suchen eine Wohnung mit Balkon und einem kleinen Garten.",
    "La rivière traverse la ville et passe sous le vieux pont de pierre.",
    "Le train pour la côte part deux fois par heure de la gare du nord.",
    "El mercado abre los sábados por la mañana en la plaza mayor.",
    "La biblioteca tiene libros en muchos idiomas para los estudiantes.",
    "Река течёт мимо старой мельницы и под каменным мостом.",
    "Библиотека открывается каждое утро в девять часов.",
    "Поезд на побережье уходит дважды в час с северного вокзала.",
    "Мы ищем квартиру с балконом и небольшим садом.",
    "Поисковая система делит длинные документы на короткие фрагменты.",
    "Бібліотека працює щодня, крім неділі, з ранку до вечора.",
    "河水流过古老的磨坊，从石桥下面穿过。",
    "图书馆每天早上九点开门，晚上六点关门。",
    "搜索引擎在排序之前把长文档分成段落。",
    "去海边的火车每小时从北站出发两次。",
    "我们在找一套带阳台和小花园的公寓。",
    "这份报告是她晚上写的，半夜之前发出去了。",
    "แม่น้ำไหลผ่านโรงสีเก่าและลอดใต้สะพานหิน",
    "ห้องสมุดเปิดทุกเช้าเวลาเก้าโมงและปิดเวลาหกโมงเย็น",
    "รถไฟไปชายทะเลออกจากสถานีทางเหนือชั่วโมงละสองเที่ยว",
    "เรากำลังหาอพาร์ตเมนต์ที่มีระเบียงและสวนเล็กๆ",
    "Το ποτάμι περνά κάτω από την παλιά πέτρινη γέφυρα.",
    "Η βιβλιοθήκη ανοίγει κάθε πρωί στις εννέα.",
    "النهر يمر بجانب الطاحونة القديمة تحت الجسر الحجري.",
    "المكتبة تفتح كل صباح في الساعة التاسعة.",
    "川は古い水車小屋のそばを流れ、石の橋の下をくぐる。",
    "図書館は毎朝九時に開き、夕方六時に閉まる。",
    "query: when does the library open",
    "passage: the library opens every morning at nine",
    "Note: the station closes at ten; the last train leaves at 9:45.",
]

# Texts embedded for the reference vectors: several scripts, one too long for 64 tokens.
TEXTS = [
    "The library opens every morning at nine.",
    "Библиотека открывается каждое утро.",
    "图书馆每天早上九点开门。",
    "ห้องสมุดเปิดทุกเช้าเวลาเก้าโมง",
    "Der Zug zur Küste fährt vom Nordbahnhof.",
    " ".join(CORPUS[:4] + CORPUS[13:15] + CORPUS[19:21]),
]

# (query, passage) pairs scored for the reference logits; the last is truncated.
PAIRS = [
    ("when does the library open", "The library opens every morning at nine."),
    ("when does the library open", "The recipe needs flour, water and salt."),
    ("поезд на побережье", "Поезд на побережье уходит дважды в час."),
    ("图书馆几点开门", "图书馆每天早上九点开门，晚上六点关门。"),
    ("รถไฟไปชายทะเล", "รถไฟไปชายทะเลออกจากสถานีทางเหนือ"),
    ("search engines and passages", " ".join(CORPUS * 2)),
]


def tokenizer():
    """A Unigram tokenizer laid out as XLM-RoBERTa's: <s> <pad> </s> <unk> first."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence(
        [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        unk_token="<unk>",
        max_piece_length=8,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.add_special_tokens(["<mask>"])
    ids = [tok.token_to_id(t) for t in ["<s>", "<pad>", "</s>", "<unk>"]]
    assert ids == [0, 1, 2, 3], ids
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )
    return tok


def config(vocab_size, **extra):
    """The tiny XLM-RoBERTa config."""
    return XLMRobertaConfig(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE,
        hidden_act="gelu",
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=PAD_ID,
        bos_token_id=0,
        eos_token_id=2,
        attn_implementation="eager",
        **extra,
    )


@torch.no_grad()
def scramble(model):
    """Random values in every parameter (the default initialisation leaves biases at
    zero and layer norms at one, which would let mistakes there go unseen)."""
    for name, p in model.named_parameters():
        if "LayerNorm.weight" in name:
            p.copy_(1.0 + 0.2 * torch.randn_like(p))
        elif name.endswith("bias"):
            p.copy_(0.1 * torch.randn_like(p))
        else:
            p.copy_(torch.randn_like(p) / math.sqrt(p.shape[-1]))
    model.eval()


def batch(encodings):
    """Input ids and attention mask of a padded batch."""
    return (
        torch.tensor([e.ids for e in encodings]),
        torch.tensor([e.attention_mask for e in encodings]),
    )


def unit(v):
    return torch.nn.functional.normalize(v, dim=-1)


def write_json(path, value):
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def as_list(t):
    return [round(float(x), 7) for x in t]


def fresh(path):
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


@torch.no_grad()
def embedder(tok):
    out = DATA / "xlmr-embedder"
    fresh(out)
    model = XLMRobertaModel(config(tok.get_vocab_size()))
    scramble(model)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(str(out / "tokenizer.json"))
    (out / "1_Pooling").mkdir()
    write_json(
        out / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": HIDDEN,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )
    write_json(out / "sentence_bert_config.json", {"max_seq_length": MAX_TOKENS, "do_lower_case": False})
    write_json(
        out / "config_sentence_transformers.json",
        {"prompts": PROMPTS, "default_prompt_name": None, "similarity_fn_name": "cosine"},
    )
    write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )

    run = Tokenizer.from_str(tok.to_str())
    run.enable_truncation(max_length=MAX_TOKENS)
    run.enable_padding(pad_id=PAD_ID, pad_token="<pad>")

    def vectors(prompt):
        encodings = run.encode_batch([prompt + t for t in TEXTS])
        ids, mask = batch(encodings)
        hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).to(hidden.dtype)
        mean = (hidden * m).sum(1) / m.sum(1)
        return encodings, unit(mean), unit(hidden[:, 0])

    passages, passage_mean, passage_cls = vectors(PROMPTS["passage"])
    queries, query_mean, query_cls = vectors(PROMPTS["query"])
    _, bare_mean, _ = vectors("")
    items = []
    for i, text in enumerate(TEXTS):
        items.append(
            {
                "text": text,
                "passage_ids": [x for x, m in zip(passages[i].ids, passages[i].attention_mask) if m],
                "truncated": bool(passages[i].overflowing),
                "passage": as_list(passage_mean[i]),
                "query": as_list(query_mean[i]),
                "passage_cls": as_list(passage_cls[i]),
                "query_cls": as_list(query_cls[i]),
                "no_prompt": as_list(bare_mean[i]),
            }
        )
    assert any(it["truncated"] for it in items), "one text must be truncated"
    write_json(
        out / "reference.json",
        {
            "made_by": "scripts/make-xlmr-fixtures.py",
            "torch": torch.__version__,
            "max_tokens": MAX_TOKENS,
            "prompts": PROMPTS,
            "items": items,
        },
    )


@torch.no_grad()
def reranker(tok):
    out = DATA / "xlmr-reranker"
    fresh(out)
    torch.manual_seed(SEED + 1)
    model = XLMRobertaForSequenceClassification(config(tok.get_vocab_size(), num_labels=1))
    scramble(model)
    # Logits of a few units rather than tenths, so that the scores spread out.
    model.classifier.out_proj.weight.mul_(8.0)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(str(out / "tokenizer.json"))

    run = Tokenizer.from_str(tok.to_str())
    run.enable_truncation(max_length=MAX_TOKENS, strategy="longest_first")
    run.enable_padding(pad_id=PAD_ID, pad_token="<pad>")
    encodings = run.encode_batch(PAIRS)
    ids, mask = batch(encodings)
    logits = model(input_ids=ids, attention_mask=mask).logits[:, 0]
    items = []
    for (query, passage), e, logit in zip(PAIRS, encodings, logits):
        items.append(
            {
                "query": query,
                "passage": passage,
                "ids": [x for x, m in zip(e.ids, e.attention_mask) if m],
                "truncated": bool(e.overflowing),
                "logit": round(float(logit), 7),
                "score": round(float(torch.sigmoid(logit)), 7),
            }
        )
    assert items[-1]["truncated"], "the last pair must be truncated"
    write_json(
        out / "reference.json",
        {
            "made_by": "scripts/make-xlmr-fixtures.py",
            "torch": torch.__version__,
            "max_tokens": MAX_TOKENS,
            "items": items,
        },
    )


def main():
    torch.manual_seed(SEED)
    tok = tokenizer()
    embedder(tok)
    reranker(tok)
    for name in ["xlmr-embedder", "xlmr-reranker"]:
        size = sum(p.stat().st_size for p in (DATA / name).rglob("*") if p.is_file())
        print(f"{name}: {size} bytes")


if __name__ == "__main__":
    main()
