"""The Kueue stage: Kueue admits each gang against quota before its gates lift."""
