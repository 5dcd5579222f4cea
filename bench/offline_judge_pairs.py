"""Self-authored probe pairs for the offline support judge.

References are pseudo-abstracts written for this probe (in our own words, loosely about well-known
papers); claims are related-work style sentences. Labels: 'support' (a paraphrase the reference
supports), 'topical' (same topic, not supported), 'contra' (contradicts the reference: negation,
reversed comparison, changed number, swapped role).
"""

REFS = {
    # ---------------------------------------------------------------- held-out probe references
    "transformer": (
        "Title: A Sequence Model Built Only on Attention\n"
        "Sequence transduction has mostly relied on recurrent or convolutional encoder-decoder networks. "
        "We introduce the Transformer, an architecture that uses attention alone and drops recurrence and "
        "convolution altogether. On two machine translation benchmarks it yields better translations while "
        "being far easier to parallelize, and it trains in a fraction of the time. It reaches 28.4 BLEU on "
        "WMT 2014 English-to-German."
    ),
    "bert": (
        "Title: Deep Bidirectional Pre-training of Language Encoders\n"
        "We present BERT, a language representation model that pre-trains deep bidirectional encoders on "
        "unlabeled text by conditioning on both left and right context in every layer. The pre-trained "
        "model can be fine-tuned with a single extra output layer for tasks such as question answering and "
        "natural language inference. BERT sets new state-of-the-art results on eleven NLP tasks, including "
        "a GLUE score of 80.5."
    ),
    "dpr": (
        "Title: Dense Representations for Open-Domain Passage Retrieval\n"
        "Open-domain question answering needs a retriever that finds candidate passages, usually sparse "
        "methods such as TF-IDF or BM25. We show that retrieval can be done with dense embeddings alone, "
        "learned from a small number of questions and passages with a dual-encoder framework. Our dense "
        "retriever beats a strong Lucene-BM25 baseline by 9 to 19 points in top-20 passage retrieval "
        "accuracy, and helps our end-to-end QA system set new results on several benchmarks."
    ),
    "resnet": (
        "Title: Residual Learning for Very Deep Image Recognition\n"
        "Deeper networks are harder to train. We reformulate layers as learning residual functions with "
        "reference to their inputs instead of unreferenced functions. Residual networks are easier to "
        "optimize and gain accuracy from considerably increased depth. On ImageNet we evaluate residual nets "
        "with up to 152 layers, 8 times deeper than VGG nets but with lower complexity, and an ensemble "
        "achieves 3.57% top-5 error."
    ),
    "gpt3": (
        "Title: Few-Shot Learning with Very Large Language Models\n"
        "We train GPT-3, an autoregressive language model with 175 billion parameters, and evaluate it "
        "without any gradient updates or fine-tuning, with tasks and demonstrations given purely as text. "
        "It performs strongly on translation, question answering and cloze tasks in the few-shot setting. "
        "We also find datasets where few-shot learning still struggles and discuss broader societal impacts."
    ),
    "rag": (
        "Title: Retrieval-Augmented Generation for Knowledge-Intensive NLP\n"
        "Large pre-trained language models store factual knowledge in their parameters, but their ability "
        "to access and precisely manipulate it is limited. We combine a parametric seq2seq generator with a "
        "non-parametric memory: a dense vector index of Wikipedia accessed by a neural retriever. RAG models "
        "set the state of the art on three open-domain QA tasks and generate more specific, diverse and "
        "factual language than a parametric-only baseline."
    ),
    "t5": (
        "Title: Exploring Transfer Learning with a Unified Text-to-Text Transformer\n"
        "We cast every text processing problem as a text-to-text task, which lets one model, objective and "
        "decoding procedure serve all tasks. We systematically compare pre-training objectives, "
        "architectures, unlabeled datasets and transfer approaches on dozens of language understanding "
        "tasks. We also release the Colossal Clean Crawled Corpus (C4), and our largest model reaches "
        "state-of-the-art results on many benchmarks."
    ),
    "word2vec": (
        "Title: Efficient Estimation of Word Representations in Vector Space\n"
        "We propose two model architectures for computing continuous vector representations of words from "
        "very large data sets. The quality of the representations is measured in a word similarity task. "
        "We observe large improvements in accuracy at much lower computational cost: learning high quality "
        "vectors from a 1.6 billion word corpus takes less than a day."
    ),
    "adam": (
        "Title: A Method for Stochastic Optimization with Adaptive Moments\n"
        "We introduce Adam, an algorithm for first-order gradient-based optimization of stochastic objective "
        "functions based on adaptive estimates of lower-order moments. The method is simple to implement, "
        "computationally efficient, needs little memory and is invariant to diagonal rescaling of the "
        "gradients. Its hyper-parameters have intuitive interpretations and typically require little tuning."
    ),
    "dropout": (
        "Title: Dropout: Preventing Neural Networks from Overfitting\n"
        "Deep neural networks with many parameters are powerful but overfit easily. Dropout randomly drops "
        "units and their connections from the network during training, which prevents units from "
        "co-adapting too much. At test time a single unthinned network with scaled-down weights approximates "
        "averaging the predictions of many thinned networks. Dropout improves performance on vision, speech "
        "recognition and document classification benchmarks."
    ),
    "colbert": (
        "Title: Late Interaction over Contextualized Embeddings for Efficient Passage Search\n"
        "Fine-tuned language models made ranking far more effective but also far more expensive. ColBERT "
        "encodes queries and documents independently with BERT and then applies a cheap late interaction "
        "step that compares their token embeddings. Document representations can therefore be precomputed "
        "offline. ColBERT is competitive with BERT-based rankers while running two orders of magnitude "
        "faster."
    ),
    "lora": (
        "Title: Low-Rank Adaptation of Large Language Models\n"
        "Full fine-tuning of very large models becomes impractical as they grow. We freeze the pre-trained "
        "weights and inject trainable low-rank decomposition matrices into each Transformer layer. This cuts "
        "the number of trainable parameters by 10,000 times and the GPU memory requirement by 3 times "
        "compared with fine-tuning GPT-3 175B with Adam, with no additional inference latency."
    ),
    "cot": (
        "Title: Chain-of-Thought Prompting Elicits Reasoning in Large Language Models\n"
        "We show that generating a chain of thought, a series of intermediate reasoning steps, greatly "
        "improves the ability of large language models to perform complex reasoning. Such reasoning emerges "
        "naturally in sufficiently large models when a few chain-of-thought demonstrations are given as "
        "exemplars in the prompt. Experiments on arithmetic, commonsense and symbolic reasoning tasks show "
        "striking gains."
    ),
    "instructgpt": (
        "Title: Training Language Models to Follow Instructions with Human Feedback\n"
        "Making language models bigger does not inherently make them better at following a user's intent. "
        "We fine-tune GPT-3 with supervised learning on labeler demonstrations and then with reinforcement "
        "learning from human feedback on rankings of model outputs. In human evaluations, outputs of the "
        "1.3B parameter InstructGPT model are preferred to outputs of the 175B GPT-3, despite having 100x "
        "fewer parameters."
    ),
    "bm25": (
        "Title: The Probabilistic Relevance Framework\n"
        "The probabilistic relevance framework underlies the BM25 ranking function. We describe how term "
        "frequency, document length normalization and inverse document frequency combine in BM25, and "
        "how the model extends to documents with several fields in BM25F. We discuss parameter "
        "tuning and relate the framework to language modelling approaches to retrieval."
    ),
    "fid": (
        "Title: Leveraging Passage Retrieval with Generative Models for Open Domain QA\n"
        "Generative models for open-domain question answering are competitive without external knowledge "
        "but need billions of parameters. We retrieve supporting passages and feed them to a sequence-to-"
        "sequence model that encodes each passage independently and fuses them in the decoder. Performance "
        "improves significantly as the number of retrieved passages grows, which suggests the decoder "
        "aggregates evidence from multiple passages."
    ),
    "storm": (
        "Title: Assisting in Writing Wikipedia-like Articles From Scratch\n"
        "We study how large language models can write grounded, organized long-form articles from scratch. "
        "STORM first researches a topic by discovering diverse perspectives and simulating conversations in "
        "which writers with those perspectives ask a topic expert questions grounded in Internet sources. "
        "It then curates the collected information into an outline. Compared with an outline-driven "
        "retrieval-augmented baseline, STORM's articles are judged more organized and broader in coverage."
    ),
    "simcse": (
        "Title: Simple Contrastive Learning of Sentence Embeddings\n"
        "We present SimCSE, a simple contrastive framework for sentence embeddings. The unsupervised version "
        "predicts the input sentence itself under a contrastive objective, using only standard dropout as "
        "noise. The supervised version uses natural language inference pairs, with entailment pairs as "
        "positives and contradiction pairs as hard negatives. SimCSE improves semantic textual similarity "
        "results for BERT-base models."
    ),
    "alphafold": (
        "Title: Highly Accurate Protein Structure Prediction\n"
        "Predicting the three-dimensional structure a protein will adopt from its amino acid sequence has "
        "been an open problem for 50 years. We present a neural network that predicts protein structures "
        "with atomic accuracy even when no similar structure is known. In the CASP14 assessment it was "
        "competitive with experimental structures in a majority of cases and greatly outperformed other "
        "methods."
    ),
    "eitc": (
        "Title: Tax Credits and the Distribution of Income\n"
        "We study the earned income tax credit, a refundable credit for low-income working families. Using "
        "policy-induced variation, we find that a $1000 increase in the credit raises employment by 7.3 "
        "percentage points and lowers the share of households in poverty by 9.4 percentage points. The "
        "credit therefore reduces inequality while encouraging work."
    ),
    # ---------------------------------------------------------------- dev references (threshold choice)
    "elmo": (
        "Title: Deep Contextualized Word Representations\n"
        "We introduce deep contextualized word representations that model complex characteristics of word "
        "use and how these uses vary across linguistic contexts. The vectors are learned functions of the "
        "internal states of a deep bidirectional language model pre-trained on a large text corpus. Adding "
        "them to existing models significantly improves the state of the art across six challenging NLP "
        "problems, including question answering and sentiment analysis."
    ),
    "batchnorm": (
        "Title: Batch Normalization for Faster Deep Network Training\n"
        "Training deep networks is complicated because the distribution of each layer's inputs changes as "
        "the parameters of previous layers change. We normalize layer inputs for each mini-batch, which "
        "allows much higher learning rates and less careful initialization, and in some cases removes the "
        "need for dropout. Applied to an image classification model, it reaches the same accuracy with 14 "
        "times fewer training steps."
    ),
    "realm": (
        "Title: Retrieval-Augmented Language Model Pre-Training\n"
        "Language model pre-training captures world knowledge implicitly in network parameters. We augment "
        "pre-training with a latent knowledge retriever that attends over documents from a large corpus such "
        "as Wikipedia, trained in an unsupervised way with masked language modeling. On open-domain question "
        "answering benchmarks it outperforms previous methods by 4 to 16 points of absolute accuracy."
    ),
    "sbert": (
        "Title: Sentence Embeddings Using Siamese BERT Networks\n"
        "BERT requires feeding both sentences into the network for sentence-pair regression, which makes "
        "finding the most similar pair in a collection of 10,000 sentences take about 65 hours. We modify "
        "BERT with siamese and triplet network structures to derive sentence embeddings that can be compared "
        "with cosine similarity. This reduces the time to find the most similar pair to about 5 seconds "
        "while keeping BERT's accuracy."
    ),
    "gan": (
        "Title: Generative Adversarial Nets\n"
        "We propose a framework for estimating generative models through an adversarial process, in which "
        "a generative model is trained together with a discriminative model that estimates the probability "
        "that a sample came from the training data rather than the generator. The generator is trained to "
        "maximize the probability of the discriminator making a mistake. No Markov chains or unrolled "
        "approximate inference networks are needed."
    ),
    "vit": (
        "Title: An Image is Worth 16x16 Words\n"
        "Attention has been used in vision only together with convolutional networks. We show that a pure "
        "Transformer applied directly to sequences of image patches performs very well on image "
        "classification. When pre-trained on large amounts of data and transferred to mid-sized or small "
        "benchmarks, the Vision Transformer attains excellent results compared with convolutional networks "
        "while requiring substantially fewer computational resources to train."
    ),
    "ppo": (
        "Title: Proximal Policy Optimization Algorithms\n"
        "We propose a family of policy gradient methods for reinforcement learning that alternate between "
        "sampling data through interaction with the environment and optimizing a surrogate objective with "
        "stochastic gradient ascent. The objective clips the probability ratio, which allows multiple epochs "
        "of minibatch updates. The methods are simpler to implement than trust region methods and perform "
        "well on simulated robotic locomotion and Atari games."
    ),
    "kvcache": (
        "Title: Efficient Memory Management for Large Language Model Serving\n"
        "Serving large language models at high throughput requires batching many requests, but the key-value "
        "cache of each request is large and grows dynamically. We propose PagedAttention, inspired by virtual "
        "memory paging in operating systems, and build vLLM on it. vLLM achieves near-zero waste in KV cache "
        "memory and improves throughput by 2 to 4 times over state-of-the-art systems at the same latency."
    ),
}

# (ref, claim, label, split)
PAIRS = [
    # ===================== held-out probe: 20 supported paraphrases
    (
        "transformer",
        "The Transformer replaced recurrent and convolutional layers entirely with attention, which made training much more parallelizable.",
        "support",
        "probe",
    ),
    (
        "bert",
        "BERT pre-trains a deep bidirectional encoder on unlabeled text and is then fine-tuned with one additional output layer per task.",
        "support",
        "probe",
    ),
    (
        "dpr",
        "Dense passage retrieval uses a dual encoder trained on question-passage pairs and outperforms BM25 on top-20 retrieval accuracy.",
        "support",
        "probe",
    ),
    (
        "resnet",
        "Residual networks learn residual functions relative to the layer inputs, which makes very deep networks easier to optimize.",
        "support",
        "probe",
    ),
    (
        "gpt3",
        "GPT-3, with 175 billion parameters, performs tasks from textual demonstrations in a few-shot setting without any gradient updates.",
        "support",
        "probe",
    ),
    (
        "rag",
        "RAG couples a seq2seq generator with a dense index of Wikipedia accessed by a neural retriever as non-parametric memory.",
        "support",
        "probe",
    ),
    (
        "t5",
        "T5 frames every NLP problem as text-to-text and systematically compares pre-training objectives and architectures.",
        "support",
        "probe",
    ),
    (
        "word2vec",
        "Word2vec learns high-quality word vectors from a corpus of 1.6 billion words in under a day at low computational cost.",
        "support",
        "probe",
    ),
    (
        "adam",
        "Adam is a first-order optimizer that adapts step sizes from estimates of lower-order moments and needs little hyper-parameter tuning.",
        "support",
        "probe",
    ),
    (
        "dropout",
        "Dropout reduces overfitting by randomly removing units during training so that they cannot co-adapt.",
        "support",
        "probe",
    ),
    (
        "colbert",
        "ColBERT encodes queries and documents separately and compares their token embeddings in a cheap late-interaction step, so document representations can be precomputed.",
        "support",
        "probe",
    ),
    (
        "lora",
        "LoRA freezes the pre-trained weights and trains low-rank matrices injected into each Transformer layer, adding no inference latency.",
        "support",
        "probe",
    ),
    (
        "cot",
        "Chain-of-thought prompting, which shows intermediate reasoning steps in the exemplars, improves complex reasoning of large language models.",
        "support",
        "probe",
    ),
    (
        "instructgpt",
        "InstructGPT fine-tunes GPT-3 with human demonstrations and reinforcement learning from human feedback, and its 1.3B model is preferred over the 175B GPT-3.",
        "support",
        "probe",
    ),
    (
        "bm25",
        "BM25 combines term frequency, inverse document frequency and document length normalization within the probabilistic relevance framework.",
        "support",
        "probe",
    ),
    (
        "fid",
        "Fusion-in-Decoder encodes each retrieved passage independently and fuses the evidence in the decoder, improving as more passages are retrieved.",
        "support",
        "probe",
    ),
    (
        "storm",
        "STORM researches a topic by simulating conversations between writers with diverse perspectives and a topic expert before writing an outline.",
        "support",
        "probe",
    ),
    (
        "simcse",
        "Unsupervised SimCSE predicts the input sentence itself with a contrastive objective, using dropout as the only noise.",
        "support",
        "probe",
    ),
    (
        "alphafold",
        "AlphaFold predicts protein structures from amino acid sequences with atomic accuracy, even without a similar known structure.",
        "support",
        "probe",
    ),
    (
        "eitc",
        "Empirical studies show that the earned income tax credit increases employment and reduces poverty among low-income families.",
        "support",
        "probe",
    ),
    # ===================== held-out probe: 20 topical non-support
    (
        "transformer",
        "The Transformer relies on relative position representations to model long-range dependencies in music generation.",
        "topical",
        "probe",
    ),
    (
        "bert",
        "BERT was distilled into a smaller student model that keeps most of its accuracy while running faster on mobile devices.",
        "topical",
        "probe",
    ),
    (
        "dpr",
        "Hard negatives mined from a cross-encoder further improve dense retrievers trained with knowledge distillation.",
        "topical",
        "probe",
    ),
    (
        "resnet",
        "Squeeze-and-excitation blocks recalibrate channel-wise feature responses by modelling interdependencies between channels.",
        "topical",
        "probe",
    ),
    (
        "gpt3",
        "Scaling laws show that language model loss decreases as a power law in parameters, data and compute.",
        "topical",
        "probe",
    ),
    (
        "rag",
        "Retrieval-augmented models hallucinate less when the retriever is updated asynchronously during pre-training.",
        "topical",
        "probe",
    ),
    (
        "t5",
        "Mixture-of-experts layers allow text-to-text models to scale to trillions of parameters at constant compute per token.",
        "topical",
        "probe",
    ),
    (
        "word2vec",
        "GloVe factorizes a global word co-occurrence matrix to obtain word vectors that capture linear substructures.",
        "topical",
        "probe",
    ),
    (
        "adam",
        "Decoupling weight decay from the gradient update improves the generalization of adaptive optimizers.",
        "topical",
        "probe",
    ),
    (
        "dropout",
        "Label smoothing regularizes classifiers by mixing the one-hot targets with a uniform distribution over classes.",
        "topical",
        "probe",
    ),
    (
        "colbert",
        "SPLADE learns sparse lexical expansions of queries and documents that can be served from an inverted index.",
        "topical",
        "probe",
    ),
    (
        "lora",
        "Quantizing the frozen base model to 4 bits allows fine-tuning a 65B model on a single 48GB GPU.",
        "topical",
        "probe",
    ),
    (
        "cot",
        "Self-consistency samples multiple reasoning paths and takes a majority vote over their final answers.",
        "topical",
        "probe",
    ),
    (
        "instructgpt",
        "Constitutional AI replaces human preference labels for harmlessness with feedback generated by the model from a list of principles.",
        "topical",
        "probe",
    ),
    (
        "bm25",
        "Query likelihood models rank documents by the probability that a document language model generates the query with Dirichlet smoothing.",
        "topical",
        "probe",
    ),
    (
        "fid",
        "Generative readers can be trained to cite the passages they use, which allows readers to verify each generated answer.",
        "topical",
        "probe",
    ),
    (
        "storm",
        "Wikipedia editors prefer AI-generated articles that contain fewer citations to low-quality news sources.",
        "topical",
        "probe",
    ),
    (
        "simcse",
        "Whitening transformations of sentence embeddings make the representation space isotropic and improve similarity search.",
        "topical",
        "probe",
    ),
    (
        "alphafold",
        "Protein language models trained on millions of sequences can predict the effects of mutations without supervision.",
        "topical",
        "probe",
    ),
    (
        "eitc",
        "Optimal income tax theory derives top marginal tax rates from the elasticity of taxable income and the shape of the income distribution.",
        "topical",
        "probe",
    ),
    # ===================== held-out probe: 10 contradictions
    (
        "transformer",
        "The Transformer still relies on recurrence, adding attention on top of a recurrent encoder-decoder for translation.",
        "contra",
        "probe",
    ),
    (
        "bert",
        "BERT pre-trains a unidirectional left-to-right encoder that conditions only on the left context.",
        "contra",
        "probe",
    ),
    (
        "dpr",
        "Dense passage retrieval does not outperform BM25 on top-20 retrieval accuracy for open-domain question answering.",
        "contra",
        "probe",
    ),
    (
        "resnet",
        "Residual networks evaluated on ImageNet are limited to 50 layers because deeper residual nets are harder to optimize.",
        "contra",
        "probe",
    ),
    (
        "gpt3",
        "GPT-3 is evaluated after task-specific fine-tuning with gradient updates on each downstream dataset.",
        "contra",
        "probe",
    ),
    (
        "lora",
        "LoRA reduces the number of trainable parameters by 100 times compared with full fine-tuning of GPT-3.",
        "contra",
        "probe",
    ),
    (
        "instructgpt",
        "Human evaluators preferred the outputs of the 175B GPT-3 over those of the 1.3B InstructGPT model.",
        "contra",
        "probe",
    ),
    (
        "colbert",
        "ColBERT is two orders of magnitude slower than BERT-based rankers because it cannot precompute document representations.",
        "contra",
        "probe",
    ),
    (
        "eitc",
        "A $1000 increase in the earned income tax credit reduces employment by 7.3 percentage points.",
        "contra",
        "probe",
    ),
    (
        "adam",
        "Adam requires a large amount of memory and careful tuning of its hyper-parameters, which have no intuitive interpretation.",
        "contra",
        "probe",
    ),
    # ===================== dev set (used to choose thresholds; not reported as the probe)
    (
        "elmo",
        "ELMo derives contextual word vectors from the internal states of a deep bidirectional language model.",
        "support",
        "dev",
    ),
    (
        "batchnorm",
        "Batch normalization normalizes layer inputs per mini-batch, enabling higher learning rates and less careful initialization.",
        "support",
        "dev",
    ),
    (
        "realm",
        "REALM augments language model pre-training with a latent retriever over Wikipedia trained with masked language modeling.",
        "support",
        "dev",
    ),
    (
        "sbert",
        "Sentence-BERT uses siamese networks to produce sentence embeddings that can be compared with cosine similarity, cutting search time from hours to seconds.",
        "support",
        "dev",
    ),
    (
        "gan",
        "GANs train a generator against a discriminator that tries to tell real training samples from generated ones.",
        "support",
        "dev",
    ),
    (
        "vit",
        "The Vision Transformer applies a pure Transformer to sequences of image patches and rivals convolutional networks after large-scale pre-training.",
        "support",
        "dev",
    ),
    (
        "ppo",
        "PPO optimizes a clipped surrogate objective, allowing several epochs of minibatch updates, and is simpler than trust region methods.",
        "support",
        "dev",
    ),
    (
        "kvcache",
        "vLLM manages the key-value cache with PagedAttention, borrowing the idea of virtual memory paging from operating systems.",
        "support",
        "dev",
    ),
    (
        "elmo",
        "Character-level convolutional encoders let language models handle out-of-vocabulary words in morphologically rich languages.",
        "topical",
        "dev",
    ),
    (
        "batchnorm",
        "Layer normalization computes statistics over the hidden units of a single example, which suits recurrent networks.",
        "topical",
        "dev",
    ),
    (
        "realm",
        "Retrieval-enhanced transformers condition on chunks retrieved from a database of trillions of tokens to match much larger models.",
        "topical",
        "dev",
    ),
    (
        "sbert",
        "Multilingual sentence encoders can be obtained by distilling a monolingual teacher into a student trained on parallel data.",
        "topical",
        "dev",
    ),
    (
        "gan",
        "Diffusion models generate images by learning to reverse a gradual noising process and achieve better sample quality than adversarial models.",
        "topical",
        "dev",
    ),
    (
        "vit",
        "Swin Transformer computes self-attention within shifted local windows to build hierarchical feature maps for dense prediction.",
        "topical",
        "dev",
    ),
    (
        "ppo",
        "Soft actor-critic maximizes a trade-off between expected return and policy entropy in an off-policy framework.",
        "topical",
        "dev",
    ),
    (
        "kvcache",
        "Speculative decoding drafts tokens with a small model and verifies them in parallel with the large model to cut latency.",
        "topical",
        "dev",
    ),
    (
        "sbert",
        "Finding the most similar pair among 10,000 sentences with Sentence-BERT still takes about 65 hours.",
        "contra",
        "dev",
    ),
    (
        "batchnorm",
        "Batch normalization requires lower learning rates and more careful initialization than standard training.",
        "contra",
        "dev",
    ),
    ("kvcache", "vLLM improves throughput by 10 to 20 times over state-of-the-art serving systems.", "contra", "dev"),
    (
        "gan",
        "In GANs the discriminator is trained to make the generator produce samples that it cannot classify, and Markov chains are required.",
        "contra",
        "dev",
    ),
]
